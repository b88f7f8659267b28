// The sample plugin's kernels: the operators of oar-conform's core profile
// (docs/conformance.md), written as plain loops on the SDK's helpers. Each body
// checks what it needs on the calling thread (a bad call fails at once with a
// message), copies the tensor views into the work it queues on the call's
// stream, and the work runs on that stream's worker. A real chip's kernels
// launch device code here instead; the registration stays the same. The
// helpers and the creation, layout, argmax and matmul kernels are in
// common_kernels.cc (samples/primitives_plugin registers them too).
//
// Numerics: floats are computed in double and rounded once when stored, which
// meets docs/ops.md's rules for every dtype; integers wrap.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "common_kernels.h"

namespace sample {
namespace {

// --- indexing ---------------------------------------------------------------------

template <typename I>
int64_t checked_index(const TensorView& index, int64_t i, int64_t bound, const char* op) {
  const int64_t k = int64_t(sdk::load(index.ptr<I>() + i));
  if (k < 0 || k >= bound) {
    throw sdk::Error(OAR_STATUS_OUT_OF_RANGE, std::string(op) + ": index " + std::to_string(k) +
                                                  " is outside [0, " + std::to_string(bound) + ")");
  }
  return k;
}

void embedding(const KernelCall& call) {
  const TensorView weight = input(call, 0), index = input(call, 1), y = output(call);
  sdk::with_dtype<ops::kI32 | ops::kI64>(index.dtype, [&](auto type) {
    using I = decltype(type);
    launch(call, [weight, index, y] {
      const int64_t rows = weight.shape[0];
      const int64_t width = weight.ndim > 1 ? weight.shape[1] : 1;
      const size_t bytes = size_t(width) * weight.element_size();
      for (int64_t i = 0; i < index.numel(); ++i) {
        const int64_t k = checked_index<I>(index, i, rows, "embedding");
        std::memcpy(y.data + size_t(i) * bytes, weight.data + size_t(k) * bytes, bytes);
      }
    });
  });
}

// --- elementwise ---------------------------------------------------------------------

enum class Binary { kAdd, kSub, kMul, kDiv };

template <Binary B>
void binary(const KernelCall& call) {
  const TensorView views[3] = {output(call), input(call, 0), input(call, 1)};
  sdk::with_dtype<kNumbers>(views[0].dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [views] {
      sdk::map_elements<T>(views, [](auto a, auto b) {
        using C = decltype(a);
        if constexpr (std::is_integral_v<C>) {
          if constexpr (B == Binary::kAdd) return wrap(a, b, [](auto p, auto q) { return p + q; });
          if constexpr (B == Binary::kSub) return wrap(a, b, [](auto p, auto q) { return p - q; });
          return wrap(a, b, [](auto p, auto q) { return p * q; });
        } else {  // IEEE's own operations in the storage precision (f32: exact)
          if constexpr (B == Binary::kAdd) return a + b;
          if constexpr (B == Binary::kSub) return a - b;
          if constexpr (B == Binary::kMul) return a * b;
          return a / b;
        }
      });
    });
  });
}

enum class Unary { kRelu, kGelu, kGeluTanh, kSilu };

template <Unary U>
void unary_body(const KernelCall& call) {
  const TensorView views[2] = {output(call), input(call, 0)};
  sdk::with_dtype<kNumbers>(views[0].dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [views] {
      sdk::map_elements<T>(views, [](auto x) -> decltype(x) {
        using C = decltype(x);
        if constexpr (U == Unary::kRelu) return x < C(0) ? C(0) : x;  // NaN stays NaN
        if constexpr (std::is_floating_point_v<C>) {
          const double v = x;
          if constexpr (U == Unary::kGelu) return C(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
          if constexpr (U == Unary::kGeluTanh) {
            const double k = std::sqrt(2.0 / 3.14159265358979323846);
            return C(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
          }
          return C(v / (1.0 + std::exp(-v)));
        }
        return x;
      });
    });
  });
}

void relu(const KernelCall& call) { unary_body<Unary::kRelu>(call); }
void silu(const KernelCall& call) { unary_body<Unary::kSilu>(call); }
void gelu(const KernelCall& call) {
  const std::string form = call.attrs.get_string("approximate");
  sdk::require(form == "none" || form == "tanh", OAR_STATUS_INVALID_ARGUMENT,
               "gelu: approximate must be \"none\" or \"tanh\", not \"" + form + "\"");
  if (form == "tanh") return unary_body<Unary::kGeluTanh>(call);
  unary_body<Unary::kGelu>(call);
}

// --- reductions ------------------------------------------------------------------------

template <bool kMean>
void sum_body(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  std::vector<bool> reduce(size_t(std::max(x.ndim, 1)), false);
  const std::vector<int64_t> axes = call.attrs.get_ints("axes");
  for (int64_t a : axes) reduce[size_t(sdk::normalize_axis(a, x.ndim, "sum"))] = true;
  if (axes.empty()) std::fill(reduce.begin(), reduce.end(), true);
  // The output offset of every input element: strides over the kept dimensions.
  std::vector<int64_t> out_stride(size_t(std::max(x.ndim, 1)), 0);
  int64_t stride = 1, count = 1;
  for (int d = x.ndim - 1; d >= 0; --d) {
    if (reduce[size_t(d)]) {
      count *= x.shape[d];
    } else {
      out_stride[size_t(d)] = stride;
      stride *= x.shape[d];
    }
  }
  sdk::with_dtype<kNumbers>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, out_stride, count] {
      using W = wide_t<T>;
      using A = std::conditional_t<std::is_integral_v<W>, uint64_t, double>;  // wraps for ints
      std::vector<A> total(size_t(y.numel()), A(0));
      for (int64_t i = 0; i < x.numel(); ++i) {
        int64_t rest = i, at = 0;
        for (int d = x.ndim - 1; d >= 0; --d) {
          at += rest % x.shape[d] * out_stride[size_t(d)];
          rest /= x.shape[d];
        }
        total[size_t(at)] += A(get<T>(x, i));
      }
      for (int64_t j = 0; j < y.numel(); ++j) {
        if constexpr (kMean) {
          put<T>(y, j, double(total[size_t(j)]) / double(count));
        } else if constexpr (std::is_integral_v<W>) {
          put<T>(y, j, W(total[size_t(j)]));
        } else {
          put<T>(y, j, total[size_t(j)]);
        }
      }
    });
  });
}

// --- neural network ------------------------------------------------------------------------

// Softmax of one row of |count| values read by |at(j)|, into |out(j, p)|; a
// row with NaN or +inf, or all -inf, gives NaN everywhere (docs/ops.md).
template <typename At, typename Out>
void softmax_row(int64_t count, At at, Out out) {
  double m = -INFINITY;
  for (int64_t j = 0; j < count; ++j) m = std::max(m, double(at(j)));
  double total = 0;
  for (int64_t j = 0; j < count; ++j) total += std::exp(at(j) - m);
  for (int64_t j = 0; j < count; ++j) out(j, std::exp(at(j) - m) / total);
}

void softmax(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const int axis = sdk::normalize_axis(call.attrs.get_int("axis"), x.ndim, "softmax");
  const Rows r = x.ndim == 0 ? Rows{} : rows_of(x, axis);
  sdk::with_dtype<kFloats>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, r] {
      for (int64_t o = 0; o < r.outer; ++o) {
        for (int64_t in = 0; in < r.inner; ++in) {
          const int64_t base = o * r.extent * r.inner + in;
          bool bad = false;  // NaN or +inf in the row
          for (int64_t j = 0; j < r.extent; ++j) {
            const double v = get<T>(x, base + j * r.inner);
            bad |= v != v || v == INFINITY;
          }
          softmax_row(
              r.extent, [&](int64_t j) { return double(get<T>(x, base + j * r.inner)); },
              [&](int64_t j, double p) { put<T>(y, base + j * r.inner, bad ? NAN : p); });
        }
      }
    });
  });
}

void cross_entropy(const KernelCall& call) {
  const TensorView logits = input(call, 0), target = input(call, 1), y = output(call);
  const std::string reduction = call.attrs.get_string("reduction");
  sdk::require(reduction == "mean" || reduction == "sum" || reduction == "none",
               OAR_STATUS_INVALID_ARGUMENT, "cross_entropy: unknown reduction " + reduction);
  sdk::with_dtype<kFloats>(logits.dtype, [&](auto type) {
    sdk::with_dtype<ops::kI32 | ops::kI64>(target.dtype, [&](auto index_type) {
      using T = decltype(type);
      using I = decltype(index_type);
      launch(call, [logits, target, y, reduction] {
        const int64_t n = logits.shape[0], c = logits.shape[1];
        double total = 0;
        for (int64_t row = 0; row < n; ++row) {
          const int64_t t = checked_index<I>(target, row, c, "cross_entropy");
          double m = -INFINITY;
          for (int64_t j = 0; j < c; ++j) m = std::max(m, double(get<T>(logits, row * c + j)));
          double sum = 0;
          bool nan = false;
          for (int64_t j = 0; j < c; ++j) {
            const double v = get<T>(logits, row * c + j);
            nan |= v != v;
            sum += std::exp(v - m);
          }
          const double loss = nan ? NAN : (m - get<T>(logits, row * c + t)) + std::log(sum);
          if (reduction == "none") put<T>(y, row, loss);
          total += loss;
        }
        if (reduction == "sum") put<T>(y, 0, total);
        if (reduction == "mean") put<T>(y, 0, total / double(n));
      });
    });
  });
}

struct Window {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
};

void conv2d(const KernelCall& call) {
  const TensorView x = input(call, 0), w = input(call, 1), y = output(call);
  const bool has_bias = call.has_input(2);
  const TensorView bias = has_bias ? input(call, 2) : TensorView{};
  const auto stride = call.attrs.get_pair("stride", {1, 1});
  const auto padding = call.attrs.get_pair("padding", {0, 0});
  const auto dilation = call.attrs.get_pair("dilation", {1, 1});
  const int64_t groups = call.attrs.get_int("groups");
  const Window s{w.shape[2], w.shape[3], stride[0],   stride[1],
                 padding[0], padding[1], dilation[0], dilation[1]};
  sdk::with_dtype<kFloats>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, w, y, bias, has_bias, s, groups] {
      const int64_t nb = x.shape[0], c = x.shape[1], h = x.shape[2], wd = x.shape[3];
      const int64_t o = y.shape[1], oh = y.shape[2], ow = y.shape[3];
      const int64_t cg = c / groups, og = o / groups;
      for (int64_t n = 0; n < nb; ++n)
        for (int64_t oc = 0; oc < o; ++oc)
          for (int64_t i = 0; i < oh; ++i)
            for (int64_t j = 0; j < ow; ++j) {
              double acc = has_bias ? double(get<T>(bias, oc)) : 0.0;
              const int64_t g = oc / og;
              for (int64_t ic = 0; ic < cg; ++ic)
                for (int64_t p = 0; p < s.kh; ++p)
                  for (int64_t q = 0; q < s.kw; ++q) {
                    const int64_t r = i * s.sh - s.ph + p * s.dh, col = j * s.sw - s.pw + q * s.dw;
                    if (r < 0 || r >= h || col < 0 || col >= wd) continue;
                    acc += get<T>(x, ((n * c + g * cg + ic) * h + r) * wd + col) *
                           get<T>(w, ((oc * cg + ic) * s.kh + p) * s.kw + q);
                  }
              put<T>(y, ((n * o + oc) * oh + i) * ow + j, acc);
            }
    });
  });
}

template <bool kMax>
void pool(const KernelCall& call) {
  const TensorView x = input(call, 0), y = output(call);
  const auto kernel = call.attrs.get_pair("kernel_size", {});
  const auto stride = call.attrs.get_pair("stride", {kernel[0], kernel[1]});
  const auto padding = call.attrs.get_pair("padding", {0, 0});
  const bool include_pad = kMax ? false : call.attrs.get_bool("count_include_pad");
  const Window s{kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[1]};
  sdk::with_dtype<kFloats>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, y, s, include_pad] {
      const int64_t planes = x.shape[0] * x.shape[1], h = x.shape[2], w = x.shape[3];
      const int64_t oh = y.shape[2], ow = y.shape[3];
      for (int64_t plane = 0; plane < planes; ++plane)
        for (int64_t i = 0; i < oh; ++i)
          for (int64_t j = 0; j < ow; ++j) {
            double acc = kMax ? -INFINITY : 0.0;
            int64_t inside = 0;
            for (int64_t p = 0; p < s.kh; ++p)
              for (int64_t q = 0; q < s.kw; ++q) {
                const int64_t r = i * s.sh - s.ph + p, c = j * s.sw - s.pw + q;
                if (r < 0 || r >= h || c < 0 || c >= w) continue;
                const double v = get<T>(x, (plane * h + r) * w + c);
                ++inside;
                if (!kMax)
                  acc += v;
                else if (v > acc || v != v || acc != acc)
                  acc = acc != acc ? acc : v;
              }
            if (!kMax) acc /= double(include_pad ? s.kh * s.kw : inside);
            put<T>(y, (plane * oh + i) * ow + j, acc);
          }
    });
  });
}

// layer_norm (two passes), rms_norm and batch_norm: y = (x - shift) * scale * w + b.
enum class Norm { kLayer, kRms, kBatch };

template <Norm N>
void norm(const KernelCall& call) {
  const TensorView x = input(call, 0);
  std::vector<TensorView> params;  // layer: weight, bias; rms: weight; batch: mean, var, w, b
  for (size_t i = 1; i < call.num_inputs(); ++i) params.push_back(input(call, i));
  const TensorView y = output(call);
  const double eps = call.attrs.get_float("eps");
  sdk::with_dtype<kFloats>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, params, y, eps] {
      if constexpr (N == Norm::kBatch) {
        const int64_t c = x.shape[1], inner = x.numel() / std::max<int64_t>(x.shape[0] * c, 1);
        for (int64_t i = 0; i < x.numel(); ++i) {
          const int64_t ch = i / inner % c;
          const double scale = 1.0 / std::sqrt(get<T>(params[1], ch) + eps);
          put<T>(y, i,
                 (get<T>(x, i) - get<T>(params[0], ch)) * scale * get<T>(params[2], ch) +
                     get<T>(params[3], ch));
        }
      } else {
        const int64_t d = x.shape[x.ndim - 1], rows = d == 0 ? 0 : x.numel() / d;
        for (int64_t row = 0; row < rows; ++row) {
          double mean = 0, square = 0;
          if constexpr (N == Norm::kLayer) {
            for (int64_t j = 0; j < d; ++j) mean += get<T>(x, row * d + j);
            mean /= double(d);
          }
          for (int64_t j = 0; j < d; ++j) {
            const double v = get<T>(x, row * d + j) - mean;
            square += v * v;
          }
          const double scale = 1.0 / std::sqrt(square / double(d) + eps);
          for (int64_t j = 0; j < d; ++j) {
            double v = (get<T>(x, row * d + j) - mean) * scale * get<T>(params[0], j);
            if constexpr (N == Norm::kLayer) v += get<T>(params[1], j);
            put<T>(y, row * d + j, v);
          }
        }
      }
    });
  });
}

void rotary_embedding(const KernelCall& call) {
  const TensorView x = input(call, 0), cos = input(call, 1), sin = input(call, 2), y = output(call);
  const bool interleaved = call.attrs.get_bool("interleaved");
  sdk::with_dtype<kFloats>(x.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [x, cos, sin, y, interleaved] {
      const int64_t seq = x.shape[x.ndim - 2], d = x.shape[x.ndim - 1], half = d / 2;
      const int64_t rows = d == 0 ? 0 : x.numel() / d;
      for (int64_t row = 0; row < rows; ++row) {
        const int64_t s = row % seq;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t i1 = row * d + (interleaved ? 2 * i : i);
          const int64_t i2 = row * d + (interleaved ? 2 * i + 1 : i + half);
          const double x1 = get<T>(x, i1), x2 = get<T>(x, i2);
          const double c = get<T>(cos, s * half + i), sn = get<T>(sin, s * half + i);
          put<T>(y, i1, x1 * c - x2 * sn);
          put<T>(y, i2, x2 * c + x1 * sn);
        }
      }
    });
  });
}

void attention(const KernelCall& call) {
  const TensorView q = input(call, 0), k = input(call, 1), v = input(call, 2), y = output(call);
  const bool causal = call.attrs.get_bool("causal");
  // bottom_right: query i sees keys up to i + (lk - lq); top_left: up to i.
  const bool top_left = call.attrs.get_string("causal_alignment") == "top_left";
  const double scale_attr = call.attrs.get_float("scale");
  sdk::with_dtype<kFloats>(q.dtype, [&](auto type) {
    using T = decltype(type);
    launch(call, [q, k, v, y, causal, top_left, scale_attr] {
      const int64_t lq = q.shape[q.ndim - 2], d = q.shape[q.ndim - 1];
      const int64_t lk = k.shape[k.ndim - 2], dv = v.shape[v.ndim - 1];
      int64_t heads = 1;  // the leading dimensions, equal in q, k, v and y
      for (int i = 0; i < q.ndim - 2; ++i) heads *= q.shape[i];
      const double scale =
          scale_attr != 0 ? scale_attr : (d == 0 ? 0.0 : 1.0 / std::sqrt(double(d)));
      std::vector<double> score(static_cast<size_t>(lk), 0.0);
      for (int64_t h = 0; h < heads; ++h) {
        for (int64_t i = 0; i < lq; ++i) {
          const int64_t shift = top_left ? 0 : lk - lq;
          const int64_t visible = causal ? std::clamp<int64_t>(i + shift + 1, 0, lk) : lk;
          for (int64_t j = 0; j < visible; ++j) {
            double dot = 0;
            for (int64_t e = 0; e < d; ++e)
              dot += get<T>(q, (h * lq + i) * d + e) * get<T>(k, (h * lk + j) * d + e);
            score[size_t(j)] = scale * dot;
          }
          std::vector<double> p(static_cast<size_t>(visible), 0.0);
          softmax_row(
              visible, [&](int64_t j) { return score[size_t(j)]; },
              [&](int64_t j, double value) { p[size_t(j)] = value; });
          for (int64_t e = 0; e < dv; ++e) {
            double acc = 0;
            for (int64_t j = 0; j < visible; ++j)
              acc += p[size_t(j)] * get<T>(v, (h * lk + j) * dv + e);
            put<T>(y, (h * lq + i) * dv + e, acc);
          }
        }
      }
    });
  });
}

}  // namespace

void register_kernels(const oar_kernel_registrar_t* registrar, sdk::KernelTable& table,
                      const sdk::AllocationTable& allocations) {
  const sdk::KernelRegistrar r(registrar);
  void* tensors = const_cast<sdk::AllocationTable*>(&allocations);
  auto add = [&](const char* op, sdk::KernelBody body, uint32_t dtypes, uint32_t flags = 0) {
    table.add(r, op, body, dtypes, flags, tensors);
  };
  // Every kernel but copy receives contiguous tensors: the core stages
  // strided inputs through copy, which must take any strides.
  add("fill", &fill, kAll);
  add("copy", &copy, kAll, OAR_KERNEL_FLAG_STRIDED_INPUTS);
  add("cast", &cast, kAll);
  add("transpose", &transpose, kAll);
  add("concat", &concat, kAll);  // 1..32 inputs (oar::sdk::signatures_for)
  add("slice", &slice, kAll);
  add("embedding", &embedding, kNumbers);
  add("add", &binary<Binary::kAdd>, kNumbers);
  add("sub", &binary<Binary::kSub>, kNumbers);
  add("mul", &binary<Binary::kMul>, kNumbers);
  add("div", &binary<Binary::kDiv>, kFloats);
  add("relu", &relu, kNumbers);
  add("gelu", &gelu, kFloats);
  add("silu", &silu, kFloats);
  add("sum", &sum_body<false>, kNumbers);
  add("mean", &sum_body<true>, kFloats);
  add("argmax", &argmax, kNumbers);
  add("matmul", &matmul, kFloats);
  add("softmax", &softmax, kFloats);
  add("cross_entropy", &cross_entropy, kFloats);
  add("conv2d", &conv2d, kFloats);  // with and without bias
  add("max_pool2d", &pool<true>, kFloats);
  add("avg_pool2d", &pool<false>, kFloats);
  add("batch_norm", &norm<Norm::kBatch>, kFloats);
  add("layer_norm", &norm<Norm::kLayer>, kFloats);
  add("rms_norm", &norm<Norm::kRms>, kFloats);
  add("rotary_embedding", &rotary_embedding, kFloats);
  add("scaled_dot_product_attention", &attention, kFloats);
}

}  // namespace sample
