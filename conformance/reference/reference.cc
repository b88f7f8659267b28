// The reference implementation of the operator set: plain loops, doubles for
// floating point, int64 with two's-complement wrapping for integers. Shapes
// and attribute validation come from the schema (ops::infer_shapes); this
// file only computes values. docs/ops.md states the semantics implemented.
#include "conformance/reference/reference.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <map>

#include "conformance/reference/reference_parts.h"
#include "oar/dtype.hpp"
#include "oar/error.hpp"

namespace oar::conformance {
namespace ref {

void fail(oar_status_t code, const std::string& what) { throw Error(code, what); }

bool is_float(DLDataType t) { return (ops::dtype_bit(t) & ops::kFloats) != 0; }

int64_t product(const Shape& s, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < std::min(to, s.size()); ++i) n *= s[i];
  return n;
}

// Two's complement reinterpretation of a modular (uint64) result.
int64_t wrap(uint64_t v) {
  int64_t r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

// A binary floating-point format with |mant| fraction bits and |exp| exponent
// bits (IEEE layout), rounding to nearest, ties to even, with subnormals.
uint32_t encode_float(double value, int mant, int exp) {
  const uint32_t sign = std::signbit(value) ? 1u << (mant + exp) : 0u;
  const uint32_t inf = ((1u << exp) - 1) << mant;
  const int bias = (1 << (exp - 1)) - 1;
  if (std::isnan(value)) return sign | inf | (1u << (mant - 1));
  const double a = std::fabs(value);
  if (a == 0) return sign;
  if (std::isinf(a)) return sign | inf;
  int e = 0;
  std::frexp(a, &e);                               // a = f * 2^e, f in [0.5, 1)
  const int unbiased = std::max(e - 1, 1 - bias);  // subnormals use the least exponent
  if (unbiased > bias) return sign | inf;
  const double q = std::ldexp(a, mant - unbiased);  // a in units in the last place (exact)
  double r = std::floor(q);
  const double frac = q - r;
  if (frac > 0.5 || (frac == 0.5 && std::fmod(r, 2.0) != 0)) r += 1;
  // Normal: r in [2^mant, 2^(mant+1)], the implicit bit adds one to the exponent
  // field; subnormal: field 0. A carry out of the fraction moves into the
  // exponent, up to the infinity encoding.
  const uint64_t bits = (uint64_t(unbiased + bias - 1) << mant) + uint64_t(r);
  return sign | uint32_t(std::min<uint64_t>(bits, inf));
}

double decode_float(uint32_t bits, int mant, int exp) {
  const int bias = (1 << (exp - 1)) - 1;
  const uint32_t e = (bits >> mant) & ((1u << exp) - 1);
  const uint32_t f = bits & ((1u << mant) - 1);
  const double sign = (bits >> (mant + exp)) & 1u ? -1.0 : 1.0;
  if (e == (1u << exp) - 1) return f != 0 ? kNaN : sign * kInf;
  const double m = e != 0 ? double(f | (1u << mant)) : double(f);
  return sign * std::ldexp(m, int(e != 0 ? e : 1) - bias - mant);
}

// |v| as a double rounded to odd: rounding that once more to a format of at
// most 51 bits of precision gives the correctly rounded result (no double
// rounding for i64 -> f32/f16/bf16).
double int_to_double_odd(int64_t v) {
  const uint64_t a = v < 0 ? 0 - uint64_t(v) : uint64_t(v);
  int shift = 0;
  while ((a >> shift) >= (uint64_t(1) << 53)) ++shift;
  uint64_t m = a >> shift;
  if (shift > 0 && (a & ((uint64_t(1) << shift) - 1)) != 0) m |= 1;
  const double d = std::ldexp(double(m), shift);
  return v < 0 ? -d : d;
}

template <typename T>
T load(const HostTensor& t, int64_t i) {
  if (i < 0 || uint64_t(i + 1) * sizeof(T) > t.bytes.size()) {
    fail(OAR_STATUS_INTERNAL, "reference: element " + std::to_string(i) + " is out of bounds");
  }
  T v;
  std::memcpy(&v, t.bytes.data() + i * sizeof(T), sizeof(T));
  return v;
}
template <typename T>
void store(HostTensor& t, int64_t i, T v) {
  if (i < 0 || uint64_t(i + 1) * sizeof(T) > t.bytes.size()) {
    fail(OAR_STATUS_INTERNAL, "reference: element " + std::to_string(i) + " is out of bounds");
  }
  std::memcpy(t.bytes.data() + i * sizeof(T), &v, sizeof(T));
}

void bad_dtype(DLDataType t) {
  fail(OAR_STATUS_INVALID_ARGUMENT, "reference: dtype " + dtype_name(t) + " is not in the set");
}

// ---- Index arithmetic -------------------------------------------------------

Shape strides_of(const Shape& s) {
  Shape strides(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) strides[d - 1] = strides[d] * s[d];
  return strides;
}

// Row-major over |extents|: base + sum(coordinate[d] * strides[d]) per element.
std::vector<int64_t> index_table(const Shape& extents, const Shape& strides, int64_t base) {
  std::vector<int64_t> table{base};
  for (size_t d = 0; d < extents.size(); ++d) {
    std::vector<int64_t> next;
    next.reserve(table.size() * size_t(std::max<int64_t>(extents[d], 0)));
    for (int64_t b : table) {
      for (int64_t i = 0; i < extents[d]; ++i) next.push_back(b + i * strides[d]);
    }
    table = std::move(next);
  }
  return table;
}

// Offsets into |shape| of every combination of the dimensions |select| keeps.
std::vector<int64_t> offsets(const Shape& shape, const std::vector<bool>& select) {
  Shape strides = strides_of(shape), e, s;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (select[d]) e.push_back(shape[d]), s.push_back(strides[d]);
  }
  return index_table(e, s);
}

// Offsets into |in| for each element of |out| under NumPy broadcasting.
std::vector<int64_t> broadcast_table(const Shape& out, const Shape& in) {
  Shape in_strides = strides_of(in), strides(out.size(), 0);
  for (size_t k = 0; k < in.size(); ++k) {
    if (in[k] != 1) strides[out.size() - in.size() + k] = in_strides[k];
  }
  return index_table(out, strides);
}

std::vector<double> values(const HostTensor& t) {
  std::vector<double> v(size_t(t.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = t.get(int64_t(i));
  return v;
}

void copy_element(HostTensor& dst, int64_t di, const HostTensor& src, int64_t si) {
  const size_t size = dtype_size(src.dtype);
  std::memcpy(dst.bytes.data() + di * size, src.bytes.data() + si * size, size);
}

int64_t checked_index(const HostTensor& index, int64_t i, int64_t n, const char* op) {
  int64_t v = index.get_int(i);
  if (v < 0 || v >= n) {
    fail(OAR_STATUS_OUT_OF_RANGE, std::string(op) + ": index " + std::to_string(v) +
                                      " is out of range [0, " + std::to_string(n) + ")");
  }
  return v;
}

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : a > b ? a : b; }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : a < b ? a : b; }

// ---- Operators --------------------------------------------------------------

// Elementwise over broadcast inputs; floats in double, integers/bool in int64.
void unary(Ctx& c, const F1& f, const I1& g) {
  const HostTensor& x = c.x();
  const bool fl = is_float(x.dtype);
  for (int64_t i = 0; i < x.numel(); ++i) {
    fl ? c.y().set(i, f(x.get(i))) : c.y().set_int(i, g(x.get_int(i)));
  }
}
void binary(Ctx& c, const F2& f, const I2& g) {
  const HostTensor &a = c.in[0], &b = c.in[1];
  HostTensor& y = c.y();
  const auto ia = broadcast_table(y.shape, a.shape), ib = broadcast_table(y.shape, b.shape);
  const bool fl = is_float(a.dtype);
  for (size_t i = 0; i < ia.size(); ++i) {
    fl ? y.set(int64_t(i), f(a.get(ia[i]), b.get(ib[i])))
       : y.set_int(int64_t(i), g(a.get_int(ia[i]), b.get_int(ib[i])));
  }
}
// Comparisons: the same in both domains; the bool output stores 0/1.
template <typename Cmp>
void compare(Ctx& c, Cmp cmp) {
  binary(
      c, [cmp](double a, double b) { return cmp(a, b) ? 1.0 : 0.0; },
      [cmp](int64_t a, int64_t b) { return cmp(a, b) ? int64_t(1) : int64_t(0); });
}

// Which dimensions of x the reduction's axes name (none given: all).
std::vector<bool> reduced_dims(const Ctx& c, const std::vector<int64_t>& axes) {
  const int64_t n = int64_t(c.x().shape.size());
  std::vector<bool> mask(size_t(n), axes.empty());
  for (int64_t a : axes) {
    if (n > 0) mask[size_t(a < 0 ? a + n : a)] = true;
  }
  return mask;
}
std::vector<bool> negate(std::vector<bool> v) {
  v.flip();
  return v;
}

void require_nonempty(const Ctx& c, const std::vector<int64_t>& inner) {
  if (inner.empty()) {
    fail(OAR_STATUS_INVALID_ARGUMENT,
         std::string(c.schema.name) + ": reduction over an empty axis has no identity");
  }
}

// sum, prod, max, min, mean: fold from the identity; mean divides by the count.
void reduce(Ctx& c, double init, const F2& f, int64_t init_int, const I2& g, bool mean,
            bool needs_elements) {
  const HostTensor& x = c.x();
  const auto mask = reduced_dims(c, c.attrs.get_ints("axes"));
  const auto outer = offsets(x.shape, negate(mask)), inner = offsets(x.shape, mask);
  if (needs_elements) require_nonempty(c, inner);
  for (size_t o = 0; o < outer.size(); ++o) {
    if (is_float(x.dtype)) {
      double acc = init;
      for (int64_t r : inner) acc = f(acc, x.get(outer[o] + r));
      c.y().set(int64_t(o), mean ? acc / double(inner.size()) : acc);
    } else {
      int64_t acc = init_int;
      for (int64_t r : inner) acc = g(acc, x.get_int(outer[o] + r));
      c.y().set_int(int64_t(o), acc);
    }
  }
}

// argmax/argmin: first index of the extreme; the first NaN wins.
void arg_reduce(Ctx& c, bool is_max) {
  const HostTensor& x = c.x();
  const auto mask = reduced_dims(c, {c.attrs.get_int("axis")});
  const auto outer = offsets(x.shape, negate(mask)), inner = offsets(x.shape, mask);
  require_nonempty(c, inner);
  const bool fl = is_float(x.dtype);
  for (size_t o = 0; o < outer.size(); ++o) {
    size_t best = 0;
    for (size_t r = 1; r < inner.size(); ++r) {
      const int64_t i = outer[o] + inner[r], b = outer[o] + inner[best];
      bool better;
      if (fl) {
        const double v = x.get(i), w = x.get(b);
        better = !std::isnan(w) && (std::isnan(v) || (is_max ? v > w : v < w));
      } else {
        const int64_t v = x.get_int(i), w = x.get_int(b);
        better = is_max ? v > w : v < w;
      }
      if (better) best = r;
    }
    c.y().set_int(int64_t(o), int64_t(best));
  }
}

// Rows along |axis| of x: |fn|(values of the row) -> written back in place.
void along_axis(Ctx& c, int64_t axis, const std::function<void(std::vector<double>&)>& fn) {
  const HostTensor& x = c.x();
  std::vector<bool> mask(x.shape.size(), false);
  if (!mask.empty()) mask[size_t(axis)] = true;
  const auto outer = offsets(x.shape, negate(mask)), inner = offsets(x.shape, mask);
  std::vector<double> row(inner.size());
  for (int64_t o : outer) {
    for (size_t r = 0; r < inner.size(); ++r) row[r] = x.get(o + inner[r]);
    fn(row);
    for (size_t r = 0; r < inner.size(); ++r) c.y().set(o + inner[r], row[r]);
  }
}

double row_max(const std::vector<double>& row) {
  double m = -kInf;
  for (double v : row) m = nan_max(m, v);
  return m;
}

void softmax(Ctx& c, bool log) {
  along_axis(c, c.axis(), [log](std::vector<double>& row) {
    const double m = row_max(row);
    double sum = 0;
    for (double v : row) sum += std::exp(v - m);
    for (double& v : row) v = log ? v - m - std::log(sum) : std::exp(v - m) / sum;
  });
}

void norm(Ctx& c, bool rms) {
  const auto w = values(c.in[1]);
  const auto b = rms ? std::vector<double>(w.size(), 0.0) : values(c.in[2]);
  const double eps = c.attrs.get_float("eps");
  along_axis(c, int64_t(c.x().shape.size()) - 1, [&](std::vector<double>& row) {
    const double n = double(row.size());
    double mean = 0, var = 0;
    for (double v : row) mean += v;
    mean = rms ? 0.0 : mean / n;  // rms_norm: the "variance" is mean(x^2)
    for (double v : row) var += (v - mean) * (v - mean);
    var /= n;
    for (size_t i = 0; i < row.size(); ++i) {
      row[i] = (row[i] - mean) / std::sqrt(var + eps) * w[i] + b[i];
    }
  });
}

std::vector<int64_t> pair_attr(const ops::Attrs& attrs, const char* name, Shape fallback) {
  Shape v = attrs.get_ints(name);
  if (v.empty()) v = std::move(fallback);
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

void matmul(Ctx& c) {
  const HostTensor &a = c.in[0], &b = c.in[1];
  HostTensor& y = c.y();
  const bool ta = c.attrs.get_bool("transpose_a"), tb = c.attrs.get_bool("transpose_b");
  const size_t r = y.shape.size();
  const int64_t m_ = y.shape[r - 2], n_ = y.shape[r - 1];
  const int64_t k_ = ta ? a.shape[a.shape.size() - 2] : a.shape.back();
  const Shape batch(y.shape.begin(), y.shape.end() - 2);
  const auto ab = broadcast_table(batch, Shape(a.shape.begin(), a.shape.end() - 2));
  const auto bb = broadcast_table(batch, Shape(b.shape.begin(), b.shape.end() - 2));
  const auto av = values(a), bv = values(b);
  for (size_t t = 0; t < ab.size(); ++t) {
    const double* pa = av.data() + ab[t] * m_ * k_;
    const double* pb = bv.data() + bb[t] * k_ * n_;
    for (int64_t m = 0; m < m_; ++m) {
      for (int64_t n = 0; n < n_; ++n) {
        double s = 0;
        for (int64_t k = 0; k < k_; ++k) {
          s += pa[ta ? k * m_ + m : m * k_ + k] * pb[tb ? n * k_ + k : k * n_ + n];
        }
        y.set((int64_t(t) * m_ + m) * n_ + n, s);
      }
    }
  }
}

void conv2d(Ctx& c) {
  const HostTensor &x = c.x(), &w = c.in[1];
  HostTensor& y = c.y();
  const auto stride = pair_attr(c.attrs, "stride", {1, 1});
  const auto pad = pair_attr(c.attrs, "padding", {0, 0});
  const auto dil = pair_attr(c.attrs, "dilation", {1, 1});
  const int64_t groups = c.attrs.get_int("groups");
  const int64_t N = x.shape[0], C = x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t O = w.shape[0], Cg = w.shape[1], KH = w.shape[2], KW = w.shape[3];
  const int64_t OH = y.shape[2], OW = y.shape[3], Og = O / groups;
  const auto xv = values(x), wv = values(w);
  const auto bias = c.in.size() > 2 ? values(c.in[2]) : std::vector<double>(size_t(O), 0.0);
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t o = 0; o < O; ++o) {
      for (int64_t oh = 0; oh < OH; ++oh) {
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = bias[size_t(o)];
          for (int64_t ci = 0; ci < Cg; ++ci) {
            const int64_t ch = (o / Og) * Cg + ci;
            for (int64_t i = 0; i < KH; ++i) {
              const int64_t h = oh * stride[0] - pad[0] + i * dil[0];
              for (int64_t j = 0; j < KW; ++j) {
                const int64_t v = ow * stride[1] - pad[1] + j * dil[1];
                if (h < 0 || h >= H || v < 0 || v >= W) continue;
                s += xv[size_t(((n * C + ch) * H + h) * W + v)] *
                     wv[size_t(((o * Cg + ci) * KH + i) * KW + j)];
              }
            }
          }
          y.set(((n * O + o) * OH + oh) * OW + ow, s);
        }
      }
    }
  }
}

void pool2d(Ctx& c, bool is_max) {
  const HostTensor& x = c.x();
  HostTensor& y = c.y();
  const auto k = pair_attr(c.attrs, "kernel_size", {});
  const auto stride = pair_attr(c.attrs, "stride", k);
  const auto pad = pair_attr(c.attrs, "padding", {0, 0});
  const bool include_pad = !is_max && c.attrs.get_bool("count_include_pad");
  const int64_t H = x.shape[2], W = x.shape[3], OH = y.shape[2], OW = y.shape[3];
  const auto xv = values(x);
  for (int64_t p = 0; p < x.shape[0] * x.shape[1]; ++p) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        double acc = is_max ? -kInf : 0.0;
        int64_t count = 0;
        for (int64_t h = oh * stride[0] - pad[0]; h < oh * stride[0] - pad[0] + k[0]; ++h) {
          for (int64_t v = ow * stride[1] - pad[1]; v < ow * stride[1] - pad[1] + k[1]; ++v) {
            if (h < 0 || h >= H || v < 0 || v >= W) continue;
            const double e = xv[size_t((p * H + h) * W + v)];
            acc = is_max ? nan_max(acc, e) : acc + e;
            ++count;
          }
        }
        const double divisor = include_pad ? double(k[0] * k[1]) : double(count);
        y.set((p * OH + oh) * OW + ow, is_max ? acc : acc / divisor);
      }
    }
  }
}

void attention(Ctx& c) {
  const HostTensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  const size_t r = q.shape.size();
  const int64_t Lq = q.shape[r - 2], D = q.shape[r - 1], Lk = k.shape[r - 2], Dv = v.shape[r - 1];
  const bool causal = c.attrs.get_bool("causal");
  // Query i sees keys j <= i + shift: bottom-right aligns the last query with
  // the last key, top-left the first query with the first key.
  const int64_t shift = c.attrs.get_string("causal_alignment") == "top_left" ? 0 : Lk - Lq;
  double scale = c.attrs.get_float("scale");
  if (scale == 0) scale = D > 0 ? 1.0 / std::sqrt(double(D)) : 1.0;  // D = 0: scores are 0
  const auto qv = values(q), kv = values(k), vv = values(v);
  std::vector<double> p(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < product(q.shape, 0, r - 2); ++b) {
    for (int64_t i = 0; i < Lq; ++i) {
      const int64_t visible = causal ? std::clamp<int64_t>(i + shift + 1, 0, Lk) : Lk;
      double m = -kInf, sum = 0;
      for (int64_t j = 0; j < visible; ++j) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d) {
          s += qv[(b * Lq + i) * D + d] * kv[(b * Lk + j) * D + d];
        }
        p[j] = s * scale;
        m = nan_max(m, p[j]);
      }
      for (int64_t j = 0; j < visible; ++j) sum += (p[j] = std::exp(p[j] - m));
      for (int64_t e = 0; e < Dv; ++e) {
        double acc = 0;  // no visible key: 0
        for (int64_t j = 0; j < visible; ++j) {
          acc += p[j] / sum * vv[(b * Lk + j) * Dv + e];
        }
        c.y().set((b * Lq + i) * Dv + e, acc);
      }
    }
  }
}

void rotary(Ctx& c) {
  const HostTensor& x = c.x();
  const bool interleaved = c.attrs.get_bool("interleaved");
  const int64_t S = x.shape[x.shape.size() - 2], D = x.shape.back(), half = D / 2;
  const auto xv = values(x), cs = values(c.in[1]), sn = values(c.in[2]);
  for (int64_t row = 0; row < (D > 0 ? x.numel() / D : 0); ++row) {
    const int64_t s = row % S;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t i1 = row * D + (interleaved ? 2 * i : i);
      const int64_t i2 = row * D + (interleaved ? 2 * i + 1 : i + half);
      const double co = cs[size_t(s * half + i)], si = sn[size_t(s * half + i)];
      c.y().set(i1, xv[size_t(i1)] * co - xv[size_t(i2)] * si);
      c.y().set(i2, xv[size_t(i2)] * co + xv[size_t(i1)] * si);
    }
  }
}

void cross_entropy(Ctx& c) {
  const HostTensor &logits = c.x(), &target = c.in[1];
  const int64_t N = logits.shape[0], C = logits.shape[1];
  const std::string reduction = c.attrs.get_string("reduction");
  const auto lv = values(logits);
  double total = 0;
  for (int64_t n = 0; n < N; ++n) {
    const int64_t t = checked_index(target, n, C, "cross_entropy");
    const std::vector<double> row(lv.begin() + n * C, lv.begin() + (n + 1) * C);
    const double m = row_max(row);
    double sum = 0;
    for (double v : row) sum += std::exp(v - m);
    const double loss = m + std::log(sum) - row[size_t(t)];
    if (reduction == "none") c.y().set(n, loss);
    total += loss;
  }
  if (reduction == "sum") c.y().set(0, total);
  if (reduction == "mean") c.y().set(0, total / double(N));
}

// ---- Layout -------------------------------------------------------------------

void gather_like(Ctx& c) {  // index_select, gather, embedding: all indexed copies
  const HostTensor &x = c.x(), &index = c.in[1];
  HostTensor& y = c.y();
  const std::string name = c.schema.name;
  if (name == "embedding") {
    const int64_t V = x.shape[0], D = x.shape[1];
    for (int64_t n = 0; n < index.numel(); ++n) {
      const int64_t row = checked_index(index, n, V, "embedding");
      for (int64_t d = 0; d < D; ++d) copy_element(y, n * D + d, x, row * D + d);
    }
    return;
  }
  const int64_t axis = c.layout_axis();
  const Shape xs = strides_of(x.shape);
  if (name == "index_select") {
    Shape strides = xs;
    strides[size_t(axis)] = 0;
    const auto base = index_table(y.shape, strides);
    const int64_t inner = product(y.shape, size_t(axis) + 1), n = y.shape[size_t(axis)];
    for (int64_t j = 0; j < n; ++j) checked_index(index, j, x.shape[size_t(axis)], "index_select");
    for (size_t i = 0; i < base.size(); ++i) {
      const int64_t j = (int64_t(i) / inner) % n;
      const int64_t v = checked_index(index, j, x.shape[size_t(axis)], "index_select");
      copy_element(y, int64_t(i), x, base[i] + v * xs[size_t(axis)]);
    }
    return;
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {  // gather
    if (int64_t(d) != axis && index.shape[d] > x.shape[d]) {
      fail(OAR_STATUS_INVALID_ARGUMENT,
           "gather: index dimension " + std::to_string(d) + " exceeds x's off the axis");
    }
  }
  Shape strides = xs;
  strides[size_t(axis)] = 0;
  const auto base = index_table(index.shape, strides);
  for (size_t i = 0; i < base.size(); ++i) {
    const int64_t v = checked_index(index, int64_t(i), x.shape[size_t(axis)], "gather");
    copy_element(y, int64_t(i), x, base[i] + v * xs[size_t(axis)]);
  }
}

void permute_copy(Ctx& c) {  // transpose, slice: a strided view of x
  const HostTensor& x = c.x();
  const Shape xs = strides_of(x.shape);
  Shape strides;
  int64_t base = 0;
  if (std::string(c.schema.name) == "transpose") {
    for (int64_t p : c.attrs.get_ints("perm")) {
      strides.push_back(xs[size_t(p < 0 ? p + int64_t(xs.size()) : p)]);
    }
  } else {
    const int64_t axis = c.layout_axis(), n = x.shape[size_t(axis)];
    int64_t start = c.attrs.get_int("start");
    start = start < 0 ? std::max<int64_t>(start + n, 0) : std::min(start, n);
    strides = xs;
    strides[size_t(axis)] *= c.attrs.get_int("step");
    base = start * xs[size_t(axis)];
  }
  const auto table = index_table(c.y().shape, strides, base);
  for (size_t i = 0; i < table.size(); ++i) copy_element(c.y(), int64_t(i), x, table[i]);
}

void concat(Ctx& c) {
  const int64_t axis = c.layout_axis();
  HostTensor& y = c.y();
  const int64_t outer = product(y.shape, 0, size_t(axis));
  int64_t i = 0;
  for (int64_t o = 0; o < outer; ++o) {
    for (const HostTensor& t : c.in) {
      const int64_t block = product(t.shape, size_t(axis));
      for (int64_t e = 0; e < block; ++e) copy_element(y, i++, t, o * block + e);
    }
  }
}

void where(Ctx& c) {
  HostTensor& y = c.y();
  const auto ic = broadcast_table(y.shape, c.in[0].shape);
  const auto ia = broadcast_table(y.shape, c.in[1].shape);
  const auto ib = broadcast_table(y.shape, c.in[2].shape);
  for (size_t i = 0; i < ic.size(); ++i) {
    const bool take_a = c.in[0].get_int(ic[i]) != 0;
    copy_element(y, int64_t(i), c.in[take_a ? 1 : 2], take_a ? ia[i] : ib[i]);
  }
}

void cast(Ctx& c) {
  const HostTensor& x = c.x();
  for (int64_t i = 0; i < x.numel(); ++i) {
    is_float(x.dtype) ? c.y().set(i, x.get(i)) : c.y().set_int(i, x.get_int(i));
  }
}

double gelu(double x, bool tanh_form) {
  if (!tanh_form) return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
  const double k = std::sqrt(2.0 / 3.14159265358979323846);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

// y[..., n] = scale[n] * sum_k x[..., k] * weight[n, k], exact in double
// (the i8 weights and their products with x are exact), rounded once.
void matmul_w8(Ctx& c) {
  const HostTensor &x = c.in[0], &w = c.in[1], &scale = c.in[2];
  HostTensor& y = c.y();
  const int64_t K = x.shape.back(), N = w.shape[0];
  const int64_t rows = K == 0 ? y.numel() / std::max<int64_t>(N, 1) : x.numel() / K;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t n = 0; n < N; ++n) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k) acc += x.get(r * K + k) * double(w.get_int(n * K + k));
      y.set(r * N + n, scale.get(n) * acc);
    }
  }
}

int64_t add_wrap(int64_t a, int64_t b) { return wrap(uint64_t(a) + uint64_t(b)); }
int64_t mul_wrap(int64_t a, int64_t b) { return wrap(uint64_t(a) * uint64_t(b)); }
int64_t neg_wrap(int64_t a) { return wrap(0 - uint64_t(a)); }
int64_t int_max(int64_t a, int64_t b) { return std::max(a, b); }
int64_t int_min(int64_t a, int64_t b) { return std::min(a, b); }
double plus(double a, double b) { return a + b; }
double times(double a, double b) { return a * b; }

const ReferenceTable& impls() {
  static const ReferenceTable table = [] {
    ReferenceTable t = {
        {"fill",
         [](Ctx& c) {
           for (int64_t i = 0; i < c.y().numel(); ++i) c.y().set(i, c.attrs.get_float("value"));
         }},
        {"copy", [](Ctx& c) { c.y().bytes = c.x().bytes; }},
        {"cast", cast},
        {"transpose", permute_copy},
        {"concat", concat},
        {"slice", permute_copy},
        {"index_select", gather_like},
        {"gather", gather_like},
        {"embedding", gather_like},
        {"neg",
         [](Ctx& c) {
           unary(
               c, [](double x) { return -x; }, neg_wrap);
         }},
        {"abs",
         [](Ctx& c) {
           unary(
               c, [](double x) { return std::fabs(x); },
               [](int64_t x) { return x < 0 ? neg_wrap(x) : x; });
         }},
        {"exp", [](Ctx& c) { unary(c, [](double x) { return std::exp(x); }); }},
        {"log", [](Ctx& c) { unary(c, [](double x) { return std::log(x); }); }},
        {"sqrt", [](Ctx& c) { unary(c, [](double x) { return std::sqrt(x); }); }},
        {"rsqrt", [](Ctx& c) { unary(c, [](double x) { return 1 / std::sqrt(x); }); }},
        {"sin", [](Ctx& c) { unary(c, [](double x) { return std::sin(x); }); }},
        {"cos", [](Ctx& c) { unary(c, [](double x) { return std::cos(x); }); }},
        {"tanh", [](Ctx& c) { unary(c, [](double x) { return std::tanh(x); }); }},
        {"sigmoid", [](Ctx& c) { unary(c, [](double x) { return 1 / (1 + std::exp(-x)); }); }},
        {"relu",
         [](Ctx& c) {
           unary(
               c, [](double x) { return x < 0 ? 0.0 : x; },
               [](int64_t x) { return x < 0 ? int64_t(0) : x; });
         }},
        {"gelu",
         [](Ctx& c) {
           const std::string form = c.attrs.get_string("approximate");
           if (form != "none" && form != "tanh") {
             fail(OAR_STATUS_INVALID_ARGUMENT,
                  "gelu: approximate must be none or tanh, not " + form);
           }
           unary(c, [tanh_form = form == "tanh"](double x) { return gelu(x, tanh_form); });
         }},
        {"silu", [](Ctx& c) { unary(c, [](double x) { return x / (1 + std::exp(-x)); }); }},
        {"erf", [](Ctx& c) { unary(c, [](double x) { return std::erf(x); }); }},
        {"floor", [](Ctx& c) { unary(c, [](double x) { return std::floor(x); }); }},
        {"ceil", [](Ctx& c) { unary(c, [](double x) { return std::ceil(x); }); }},
        {"reciprocal", [](Ctx& c) { unary(c, [](double x) { return 1 / x; }); }},
        {"add", [](Ctx& c) { binary(c, plus, add_wrap); }},
        {"sub",
         [](Ctx& c) {
           binary(
               c, [](double a, double b) { return a - b; },
               [](int64_t a, int64_t b) { return add_wrap(a, neg_wrap(b)); });
         }},
        {"mul", [](Ctx& c) { binary(c, times, mul_wrap); }},
        {"div", [](Ctx& c) { binary(c, [](double a, double b) { return a / b; }); }},
        {"maximum", [](Ctx& c) { binary(c, nan_max, int_max); }},
        {"minimum", [](Ctx& c) { binary(c, nan_min, int_min); }},
        {"pow", [](Ctx& c) { binary(c, [](double a, double b) { return std::pow(a, b); }); }},
        {"eq", [](Ctx& c) { compare(c, [](auto a, auto b) { return a == b; }); }},
        {"ne", [](Ctx& c) { compare(c, [](auto a, auto b) { return a != b; }); }},
        {"lt", [](Ctx& c) { compare(c, [](auto a, auto b) { return a < b; }); }},
        {"le", [](Ctx& c) { compare(c, [](auto a, auto b) { return a <= b; }); }},
        {"gt", [](Ctx& c) { compare(c, [](auto a, auto b) { return a > b; }); }},
        {"ge", [](Ctx& c) { compare(c, [](auto a, auto b) { return a >= b; }); }},
        {"where", where},
        {"sum", [](Ctx& c) { reduce(c, 0.0, plus, 0, add_wrap, false, false); }},
        {"mean", [](Ctx& c) { reduce(c, 0.0, plus, 0, add_wrap, true, false); }},
        {"max", [](Ctx& c) { reduce(c, -kInf, nan_max, INT64_MIN, int_max, false, true); }},
        {"min", [](Ctx& c) { reduce(c, kInf, nan_min, INT64_MAX, int_min, false, true); }},
        {"prod", [](Ctx& c) { reduce(c, 1.0, times, 1, mul_wrap, false, false); }},
        {"argmax", [](Ctx& c) { arg_reduce(c, true); }},
        {"argmin", [](Ctx& c) { arg_reduce(c, false); }},
        {"matmul", matmul},
        {"matmul_w8", matmul_w8},
        {"softmax", [](Ctx& c) { softmax(c, false); }},
        {"log_softmax", [](Ctx& c) { softmax(c, true); }},
        {"layer_norm", [](Ctx& c) { norm(c, false); }},
        {"rms_norm", [](Ctx& c) { norm(c, true); }},
        {"batch_norm",
         [](Ctx& c) {
           const auto mean = values(c.in[1]), var = values(c.in[2]);
           const auto w = values(c.in[3]), b = values(c.in[4]);
           const double eps = c.attrs.get_float("eps");
           const int64_t C = c.x().shape[1], inner = product(c.x().shape, 2);
           for (int64_t i = 0; i < c.x().numel(); ++i) {
             const size_t ch = size_t((i / inner) % C);
             c.y().set(i, (c.x().get(i) - mean[ch]) / std::sqrt(var[ch] + eps) * w[ch] + b[ch]);
           }
         }},
        {"conv2d", conv2d},
        {"max_pool2d", [](Ctx& c) { pool2d(c, true); }},
        {"avg_pool2d", [](Ctx& c) { pool2d(c, false); }},
        {"scaled_dot_product_attention", attention},
        {"rotary_embedding", rotary},
        {"cross_entropy", cross_entropy},
    };
    add_grad_references(t);
    add_nn_grad_references(t);
    add_optimizer_references(t);
    add_layout_v2_references(t);
    add_math_v2_references(t);
    return t;
  }();
  return table;
}

DLTensor as_dl(const HostTensor& t) {
  DLTensor dl{};
  dl.data = const_cast<uint8_t*>(t.bytes.data());
  dl.device = {kDLCPU, 0};
  dl.ndim = int32_t(t.shape.size());
  dl.dtype = t.dtype;
  dl.shape = const_cast<int64_t*>(t.shape.data());
  return dl;
}

}  // namespace ref

using namespace ref;  // NOLINT: the reference's own helpers

// ---- HostTensor -------------------------------------------------------------

HostTensor HostTensor::zeros(std::vector<int64_t> shape, DLDataType dtype) {
  HostTensor t{std::move(shape), dtype, {}};
  t.bytes.assign(size_t(t.numel()) * dtype_size(dtype), 0);
  return t;
}

int64_t HostTensor::numel() const { return product(shape); }

double HostTensor::get(int64_t i) const {
  switch (ops::dtype_bit(dtype)) {
    case ops::kF16:
      return half_bits_to_double(load<uint16_t>(*this, i));
    case ops::kBF16:
      return bf16_bits_to_double(load<uint16_t>(*this, i));
    case ops::kF32:
      return load<float>(*this, i);
    case ops::kF64:
      return load<double>(*this, i);
    case ops::kI32:
    case ops::kI64:
    case ops::kBool:
    case ops::kI8:
    case ops::kU8:
    case ops::kI16:
      return double(get_int(i));
    default:
      bad_dtype(dtype);
  }
}

int64_t HostTensor::get_int(int64_t i) const {
  switch (ops::dtype_bit(dtype)) {
    case ops::kI32:
      return load<int32_t>(*this, i);
    case ops::kI64:
      return load<int64_t>(*this, i);
    case ops::kBool:
      return load<uint8_t>(*this, i) != 0 ? 1 : 0;
    case ops::kI8:
      return load<int8_t>(*this, i);
    case ops::kU8:
      return load<uint8_t>(*this, i);
    case ops::kI16:
      return load<int16_t>(*this, i);
    default:
      bad_dtype(dtype);
  }
}

void HostTensor::set(int64_t i, double value) {
  switch (ops::dtype_bit(dtype)) {
    case ops::kF16:
      return store<uint16_t>(*this, i, double_to_half_bits(value));
    case ops::kBF16:
      return store<uint16_t>(*this, i, double_to_bf16_bits(value));
    case ops::kF32:
      return store<float>(*this, i, float(value));
    case ops::kF64:
      return store<double>(*this, i, value);
    case ops::kBool:
      return store<uint8_t>(*this, i, value != 0 ? 1 : 0);  // NaN: true
    case ops::kI32:
    case ops::kI64:
    case ops::kI8:
    case ops::kU8:
    case ops::kI16: {
      // Truncation toward zero; NaN and out-of-range values are unspecified
      // (here: NaN -> 0, saturation to int64, then wrapping to the width).
      const double t = std::isnan(value) ? 0.0 : std::trunc(value);
      const int64_t v = t >= 0x1p63 ? INT64_MAX : t < -0x1p63 ? INT64_MIN : int64_t(t);
      return set_int(i, v);
    }
    default:
      bad_dtype(dtype);
  }
}

void HostTensor::set_int(int64_t i, int64_t value) {
  switch (ops::dtype_bit(dtype)) {
    case ops::kI32:
      return store<uint32_t>(*this, i, uint32_t(uint64_t(value)));
    case ops::kI64:
      return store<int64_t>(*this, i, value);
    // The narrow integers keep the low bits (two's complement wrapping).
    case ops::kI8:
    case ops::kU8:
      return store<uint8_t>(*this, i, uint8_t(uint64_t(value)));
    case ops::kI16:
      return store<uint16_t>(*this, i, uint16_t(uint64_t(value)));
    case ops::kBool:
      return store<uint8_t>(*this, i, value != 0 ? 1 : 0);
    case ops::kF64:
      return store<double>(*this, i, double(value));
    case ops::kF16:
    case ops::kBF16:
    case ops::kF32:
      return set(i, int_to_double_odd(value));
    default:
      bad_dtype(dtype);
  }
}

double half_bits_to_double(uint16_t bits) { return decode_float(bits, 10, 5); }
uint16_t double_to_half_bits(double value) { return uint16_t(encode_float(value, 10, 5)); }
double bf16_bits_to_double(uint16_t bits) { return decode_float(bits, 7, 8); }
uint16_t double_to_bf16_bits(double value) { return uint16_t(encode_float(value, 7, 8)); }

bool has_reference(const std::string& name) { return impls().count(name) != 0; }

std::vector<HostTensor> run_reference(const ops::OpSchema& schema,
                                      const std::vector<HostTensor>& inputs,
                                      const std::vector<oar_attr_t>& attrs,
                                      const std::vector<DLDataType>& output_dtypes,
                                      const std::vector<int64_t>& fill_shape) {
  std::vector<DLTensor> in;
  for (const HostTensor& t : inputs) {
    if (ops::dtype_bit(t.dtype) == 0) bad_dtype(t.dtype);
    if (t.bytes.size() != size_t(t.numel()) * dtype_size(t.dtype)) {
      fail(OAR_STATUS_INVALID_ARGUMENT,
           std::string(schema.name) + ": an input's bytes do not match its shape");
    }
    in.push_back(as_dl(t));
  }
  auto shapes = ops::infer_shapes(schema, in.data(), in.size(), attrs.data(), attrs.size());
  if (schema.inputs.empty()) {
    for (int64_t d : fill_shape) {
      if (d < 0)
        fail(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": negative dimension");
    }
    shapes = {fill_shape};
  }
  std::vector<DLDataType> types = output_dtypes;
  if (types.empty()) {
    if (inputs.empty() || schema.rule == ops::DtypeRule::kCast) {
      fail(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": needs the output dtype");
    }
    types = ops::output_dtypes(schema, inputs[schema.rule == ops::DtypeRule::kWhere ? 1 : 0].dtype);
  }
  if (types.size() != shapes.size()) {
    fail(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": wrong number of output dtypes");
  }
  std::vector<HostTensor> outputs;
  std::vector<DLTensor> out;
  for (size_t i = 0; i < shapes.size(); ++i)
    outputs.push_back(HostTensor::zeros(shapes[i], types[i]));
  for (const HostTensor& t : outputs) out.push_back(as_dl(t));
  ops::check_dtypes(schema, in.data(), in.size(), out.data(), out.size());
  auto it = impls().find(schema.name);
  if (it == impls().end()) {
    fail(OAR_STATUS_UNIMPLEMENTED, std::string("reference: no implementation of ") + schema.name);
  }
  Ctx ctx{schema, inputs, ops::Attrs(schema, attrs.data(), attrs.size()), outputs};
  it->second(ctx);
  return outputs;
}

}  // namespace oar::conformance
