// The reference implementation of the operators of core/ops/schema_math_v2.cc:
// plain loops in double (int64 for integers), written from docs/ops.md.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "conformance/reference/reference_parts.h"

namespace oar::conformance::ref {
namespace {

// Elementwise over three broadcast inputs (clip); floats in double, integers in int64.
void ternary(Ctx& c, double (*f)(double, double, double), int64_t (*g)(int64_t, int64_t, int64_t)) {
  HostTensor& y = c.y();
  const auto i0 = broadcast_table(y.shape, c.in[0].shape);
  const auto i1 = broadcast_table(y.shape, c.in[1].shape);
  const auto i2 = broadcast_table(y.shape, c.in[2].shape);
  const bool fl = is_float(y.dtype);
  for (size_t i = 0; i < i0.size(); ++i) {
    fl ? y.set(int64_t(i), f(c.in[0].get(i0[i]), c.in[1].get(i1[i]), c.in[2].get(i2[i])))
       : y.set_int(int64_t(i),
                   g(c.in[0].get_int(i0[i]), c.in[1].get_int(i1[i]), c.in[2].get_int(i2[i])));
  }
}

double clip_f(double x, double lo, double hi) {
  if (std::isnan(x) || std::isnan(lo) || std::isnan(hi)) return kNaN;
  const double low = x < lo ? lo : x;
  return low > hi ? hi : low;
}
int64_t clip_i(int64_t x, int64_t lo, int64_t hi) {
  const int64_t low = x < lo ? lo : x;
  return low > hi ? hi : low;
}

// C's fmod: exact, the sign of a; a zero result is a zero of a's sign.
double fmod_f(double a, double b) { return std::fmod(a, b); }
// Python's %: fmod moved by b when the signs differ; a zero result takes b's sign.
double remainder_f(double a, double b) {
  double r = std::fmod(a, b);
  if (r == 0) return std::copysign(0.0, b);
  if ((r < 0) != (b < 0)) r += b;
  return r;
}
// Integers: division by zero gives 0; |a| mod |b| in unsigned arithmetic, so
// INT64_MIN % -1 is 0, not a trap. i32 values reach here as int64 and stay exact.
int64_t fmod_i(int64_t a, int64_t b) {
  if (b == 0) return 0;
  const uint64_t ua = a < 0 ? 0 - uint64_t(a) : uint64_t(a);
  const uint64_t ub = b < 0 ? 0 - uint64_t(b) : uint64_t(b);
  const uint64_t r = ua % ub;
  return a < 0 ? int64_t(0 - r) : int64_t(r);
}
int64_t remainder_i(int64_t a, int64_t b) {
  int64_t r = fmod_i(a, b);
  if (r != 0 && (r < 0) != (b < 0)) r += b;  // |r| < |b|: no overflow
  return r;
}

// cumsum/cumprod along the axis, from the start (or the end with |reverse|);
// |exclusive| leaves the element itself out. Floats in double, integers wrap.
void scan(Ctx& c, bool product) {
  const HostTensor& x = c.x();
  std::vector<bool> mask(x.shape.size(), false);
  if (!mask.empty()) mask[size_t(c.axis())] = true;
  const auto outer = offsets(x.shape, negate(mask)), inner = offsets(x.shape, mask);
  const bool exclusive = c.attrs.get_bool("exclusive"), reverse = c.attrs.get_bool("reverse");
  const bool fl = is_float(x.dtype);
  const size_t n = inner.size();
  for (int64_t o : outer) {
    double acc = product ? 1 : 0;
    int64_t iacc = product ? 1 : 0;
    for (size_t k = 0; k < n; ++k) {
      const int64_t i = o + inner[reverse ? n - 1 - k : k];
      const double before = acc;
      const int64_t ibefore = iacc;
      if (fl) {
        acc = product ? acc * x.get(i) : acc + x.get(i);
        c.y().set(i, exclusive ? before : acc);
      } else {
        iacc = product ? mul_wrap(iacc, x.get_int(i)) : add_wrap(iacc, x.get_int(i));
        c.y().set_int(i, exclusive ? ibefore : iacc);
      }
    }
  }
}

// log(sum(exp(x))) over the axes, shifted by the maximum: NaN if any element
// is NaN, the maximum itself if it is infinite (all -inf or empty: -inf).
void logsumexp(Ctx& c) {
  const HostTensor& x = c.x();
  const auto mask = reduced_dims(c, c.attrs.get_ints("axes"));
  const auto outer = offsets(x.shape, negate(mask)), inner = offsets(x.shape, mask);
  for (size_t o = 0; o < outer.size(); ++o) {
    double m = -kInf;
    bool nan = false;
    for (int64_t r : inner) {
      const double v = x.get(outer[o] + r);
      nan |= std::isnan(v);
      if (v > m) m = v;
    }
    double y = m;
    if (nan) {
      y = kNaN;
    } else if (!std::isinf(m)) {
      double sum = 0;
      for (int64_t r : inner) sum += std::exp(x.get(outer[o] + r) - m);
      y = m + std::log(sum);
    }
    c.y().set(int64_t(o), y);
  }
}

// sort, argsort and topk: each row along the axis ordered by value, NaN
// above everything, equal values (and NaNs, and +0 with -0) in index order;
// the first |k| positions (sort, argsort: all) written as values (bit
// copies) and i64 indices.
void order(Ctx& c, bool descending, int64_t k, bool values) {
  const HostTensor& x = c.x();
  std::vector<bool> mask(x.shape.size(), false);
  if (!mask.empty()) mask[size_t(c.axis())] = true;
  const auto outer = offsets(x.shape, negate(mask)), inner = offsets(x.shape, mask);
  const auto out_outer = offsets(c.y().shape, negate(mask));
  const auto out_inner = offsets(c.y().shape, mask);
  HostTensor& indices = c.out[values ? 1 : 0];
  const bool fl = is_float(x.dtype);
  // a below b: NaN is the largest, equal values are neither below the other.
  auto below = [&](int64_t a, int64_t b) {
    if (!fl) return x.get_int(a) < x.get_int(b);
    const double u = x.get(a), v = x.get(b);
    return !std::isnan(u) && (std::isnan(v) || u < v);
  };
  for (size_t o = 0; o < outer.size(); ++o) {
    std::vector<int64_t> idx(inner.size());
    for (size_t i = 0; i < idx.size(); ++i) idx[i] = int64_t(i);
    std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) {
      const int64_t ea = outer[o] + inner[size_t(a)], eb = outer[o] + inner[size_t(b)];
      return descending ? below(eb, ea) : below(ea, eb);
    });
    for (int64_t r = 0; r < k; ++r) {
      const int64_t to = out_outer[o] + out_inner[size_t(r)];
      if (values) copy_element(c.y(), to, x, outer[o] + inner[size_t(idx[size_t(r)])]);
      indices.set_int(to, idx[size_t(r)]);
    }
  }
}

int64_t axis_length(const Ctx& c) {
  return c.x().shape.empty() ? 1 : c.x().shape[size_t(c.axis())];
}

}  // namespace

void add_math_v2_references(ReferenceTable& table) {
  table["cumsum"] = [](Ctx& c) { scan(c, false); };
  table["cumprod"] = [](Ctx& c) { scan(c, true); };
  table["logsumexp"] = logsumexp;
  table["sort"] = [](Ctx& c) { order(c, c.attrs.get_bool("descending"), axis_length(c), true); };
  table["argsort"] = [](Ctx& c) {
    order(c, c.attrs.get_bool("descending"), axis_length(c), false);
  };
  table["topk"] = [](Ctx& c) { order(c, c.attrs.get_bool("largest"), c.attrs.get_int("k"), true); };
  table["clip"] = [](Ctx& c) { ternary(c, clip_f, clip_i); };
  table["remainder"] = [](Ctx& c) { binary(c, remainder_f, remainder_i); };
  table["fmod"] = [](Ctx& c) { binary(c, fmod_f, fmod_i); };
  // bool only: get_int reads any nonzero byte as 1.
  table["logical_and"] = [](Ctx& c) {
    binary(c, nullptr, [](int64_t a, int64_t b) { return int64_t(a != 0 && b != 0); });
  };
  table["logical_or"] = [](Ctx& c) {
    binary(c, nullptr, [](int64_t a, int64_t b) { return int64_t(a != 0 || b != 0); });
  };
  table["logical_xor"] = [](Ctx& c) {
    binary(c, nullptr, [](int64_t a, int64_t b) { return int64_t((a != 0) != (b != 0)); });
  };
  table["logical_not"] = [](Ctx& c) {
    unary(c, nullptr, [](int64_t x) { return int64_t(x == 0); });
  };
  // Integers are two's complement in int64 (i32 values sign-extended, and
  // set_int keeps the low 32 bits); bool is 0/1.
  table["bitwise_and"] = [](Ctx& c) {
    binary(c, nullptr, [](int64_t a, int64_t b) { return a & b; });
  };
  table["bitwise_or"] = [](Ctx& c) {
    binary(c, nullptr, [](int64_t a, int64_t b) { return a | b; });
  };
  table["bitwise_xor"] = [](Ctx& c) {
    binary(c, nullptr, [](int64_t a, int64_t b) { return a ^ b; });
  };
  table["bitwise_not"] = [](Ctx& c) {
    const bool boolean = ops::dtype_bit(c.x().dtype) == ops::kBool;
    boolean ? unary(c, nullptr, [](int64_t x) { return int64_t(x == 0); })
            : unary(c, nullptr, [](int64_t x) { return ~x; });
  };
}

}  // namespace oar::conformance::ref
