// cpu kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc).
// Elementwise in the compute type (f32 for f16/bf16/f32, f64 for f64) and
// parallelised with OpenMP; row sums in double. docs/ops.md ("Gradients")
// says which forms keep their precision (tanh's (1 - y)(1 + y), sigmoid(-x)
// for 1 - sigmoid(x)).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/simd.h"
#include "kernels/vmath.h"

namespace oar::cpu {
namespace {

enum class Pointwise { kRelu, kSigmoid, kTanh, kSilu, kGelu, kGeluTanh };

// e^x: the vectorizable exp_f32 in f32 (f16, bf16, f32), std::exp in f64.
template <typename C>
C exp_c(C x) {
  if constexpr (std::is_same_v<C, float>) {
    return exp_f32(x);
  } else {
    return std::exp(x);
  }
}

template <typename C>
C sigmoid(C x) {
  return C(1) / (C(1) + exp_c(-x));
}

// gelu's dx given Phi(b) (the normal CDF): dy (Phi(b) + b phi(b)).
template <typename C>
C gelu_grad_from_cdf(C dy, C b, C cdf) {
  const C pdf = exp_c(C(-0.5) * b * b) * C(0.39894228040143267794);
  return dy * (cdf + b * pdf);
}

// dx for one element: |a| is dy, |b| the operator's second input (x or y).
// |op| is a template argument so that each loop is compiled for one operator.
template <Pointwise op, typename C>
C pointwise_grad(C dy, C b) {
  switch (op) {
    case Pointwise::kRelu:
      // The positive test first: GCC vectorizes this order into fewer
      // instructions than isnan first (0.53 against 0.79 ms for 2^20 here).
      return b > 0 ? dy : (b != b ? b : C(0));
    case Pointwise::kSigmoid:
      return dy * b * (C(1) - b);
    case Pointwise::kTanh:
      return dy * ((C(1) - b) * (C(1) + b));
    case Pointwise::kSilu: {
      // One exp: sigmoid(-b) = e sigmoid(b) with e = exp(-b) (no cancellation;
      // where e overflows, sigmoid(b) is 0 and sigmoid(-b) is 1).
      const C e = exp_c(-b), s = C(1) / (C(1) + e);
      const C s_neg = std::isinf(e) ? C(1) : e * s;
      return dy * (s * (C(1) + b * s_neg));
    }
    case Pointwise::kGelu: {
      if constexpr (std::is_same_v<C, float>) return dy * gelu_grad_f32(b);  // f16, bf16
      const C cdf = C(0.5) * std::erfc(-b * C(0.70710678118654752440));
      return gelu_grad_from_cdf(dy, b, cdf);
    }
    case Pointwise::kGeluTanh: {
      if constexpr (std::is_same_v<C, float>) return dy * gelu_tanh_grad_f32(b);  // f16, bf16
      const C k = C(0.79788456080286535588), c = C(0.044715);
      const C u = k * (b + c * b * b * b);
      const C s = sigmoid(C(2) * u), one_minus_s = sigmoid(C(-2) * u);
      return dy * (s + C(2) * b * s * one_minus_s * k * (C(1) + C(3) * c * b * b));
    }
  }
  return C(0);
}

// relu_grad of f32 as a select on the elements' bits: (dy where x > 0) |
// (x where x is NaN), +0 elsewhere; two compares, two ands and an or per
// vector (the ?: form of pointwise_grad compiled to ten instructions). f64
// keeps the ?: form, which vectorizes (SSE2 has no 64-bit integer masks).
template <typename T>
inline T relu_grad_bits(T g, T x) {
  if constexpr (std::is_same_v<T, double>) {
    return x > 0 ? g : (x != x ? x : T(0));
  } else {
    uint32_t xbits, gbits;
    std::memcpy(&xbits, &x, sizeof x);
    std::memcpy(&gbits, &g, sizeof g);
    const uint32_t bits = (gbits & (0u - uint32_t(x > 0))) | (xbits & (0u - uint32_t(x != x)));
    T result;
    std::memcpy(&result, &bits, sizeof bits);
    return result;
  }
}

// gelu_grad of n contiguous f32 elements on the widest SIMD: vmath.h's
// polynomials, no libm call per element, as gelu's forward (f16 and bf16 take
// the same functions through pointwise_grad).
OAR_CPU_WIDEST_SIMD void gelu_grad_run_f32(const float* dy, const float* x, float* dx, int64_t n,
                                           bool tanh) {
  if (tanh) {
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_tanh_grad_f32(x[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_grad_f32(x[i]);
  }
}

template <Pointwise op, typename T>
void pointwise_run(View dy, View b, View dx, int64_t n) {
  const T* pdy = dy.ptr<T>();
  const T* pb = b.ptr<T>();
  T* out = dx.ptr<T>();
  if constexpr ((op == Pointwise::kGelu || op == Pointwise::kGeluTanh) &&
                std::is_same_v<T, float>) {
    constexpr int64_t kChunk = 4096;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > kParallelWork) schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t begin = chunk * kChunk;
      gelu_grad_run_f32(pdy + begin, pb + begin, out + begin, std::min(kChunk, n - begin),
                        op == Pointwise::kGeluTanh);
    }
    return;
  }
  if constexpr (op == Pointwise::kGelu && !std::is_same_v<compute_t<T>, float>) {
    // f64: erfc is a library call, which keeps a loop from being vectorized:
    // the CDFs of a chunk first, then the rest of the arithmetic in a loop
    // that vectorizes.
    using C = compute_t<T>;
    constexpr int64_t kChunk = 1024;
    const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > kParallelWork) schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t begin = chunk * kChunk, count = std::min(kChunk, n - begin);
      C cdf[kChunk];
      for (int64_t i = 0; i < count; ++i) {
        cdf[i] = C(0.5) * std::erfc(C(load(pb + begin + i)) * C(-0.70710678118654752440));
      }
      for (int64_t i = 0; i < count; ++i) {
        store(out + begin + i,
              gelu_grad_from_cdf<C>(load(pdy + begin + i), load(pb + begin + i), cdf[i]));
      }
    }
    return;
  }
  if constexpr (op == Pointwise::kRelu && (std::is_same_v<T, float> || std::is_same_v<T, double>)) {
#pragma omp parallel for simd if (n > kParallelWork) schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = relu_grad_bits(pdy[i], pb[i]);
    return;
  }
#pragma omp parallel for if (n > kParallelWork) schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    store(out + i, pointwise_grad<op, compute_t<T>>(load(pdy + i), load(pb + i)));
  }
}

void pointwise_kernel(KernelContext& context) {
  const std::string name = context.schema.name;
  Pointwise op = name == "relu_grad"      ? Pointwise::kRelu
                 : name == "sigmoid_grad" ? Pointwise::kSigmoid
                 : name == "tanh_grad"    ? Pointwise::kTanh
                 : name == "silu_grad"    ? Pointwise::kSilu
                                          : Pointwise::kGelu;
  if (op == Pointwise::kGelu && context.attrs.get_string("approximate") == "tanh") {
    op = Pointwise::kGeluTanh;
  }
  const View dy = context.inputs[0], b = context.inputs[1], dx = context.outputs[0];
  const int64_t n = dx.numel();
  if (n == 0) return;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    switch (op) {
      case Pointwise::kRelu:
        return launch(context.call, [=] { pointwise_run<Pointwise::kRelu, T>(dy, b, dx, n); });
      case Pointwise::kSigmoid:
        return launch(context.call, [=] { pointwise_run<Pointwise::kSigmoid, T>(dy, b, dx, n); });
      case Pointwise::kTanh:
        return launch(context.call, [=] { pointwise_run<Pointwise::kTanh, T>(dy, b, dx, n); });
      case Pointwise::kSilu:
        return launch(context.call, [=] { pointwise_run<Pointwise::kSilu, T>(dy, b, dx, n); });
      case Pointwise::kGelu:
        return launch(context.call, [=] { pointwise_run<Pointwise::kGelu, T>(dy, b, dx, n); });
      case Pointwise::kGeluTanh:
        return launch(context.call, [=] { pointwise_run<Pointwise::kGeluTanh, T>(dy, b, dx, n); });
    }
  });
}

// The f32 row loops below are OAR_CPU_WIDEST_SIMD (kernels/simd.h).

// Lanes of the row sums: element j adds to double lane j % kRowLanes, and
// the lanes are added in a fixed tree at the end. Independent adds (four
// AVX-512 registers) instead of one chain that waits on each add's latency;
// the order does not depend on the vector width. In double, as these sums
// cancel (dy takes both signs).
constexpr int64_t kRowLanes = 32;

// The sum over j < n of term(j).
template <typename Term>
inline __attribute__((always_inline)) double row_sum(int64_t n, Term&& term) {
  double lane[kRowLanes] = {};
  int64_t j = 0;
  for (; j + kRowLanes <= n; j += kRowLanes) {
    for (int64_t l = 0; l < kRowLanes; ++l) lane[l] += term(j + l);
  }
  for (; j < n; ++j) lane[j % kRowLanes] += term(j);
  for (int64_t half = kRowLanes / 2; half > 0; half /= 2) {
    for (int64_t l = 0; l < half; ++l) lane[l] += lane[l + half];
  }
  return lane[0];
}

// softmax_grad (log_softmax_grad with |log|) of |rows| contiguous f32 rows of
// |n|: the row's sum (of dy y, or of dy) in double lanes, then one pass,
// rounded once.
OAR_CPU_WIDEST_SIMD void softmax_rows_grad_f32(const float* dy, const float* y, float* dx,
                                               int64_t rows, int64_t n, bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* g = dy + r * n;
    const float* v = y + r * n;
    float* o = dx + r * n;
    if (log) {
      const double sum = row_sum(n, [&](int64_t j) { return double(g[j]); });
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) o[j] = float(double(g[j]) - double(exp_f32(v[j])) * sum);
    } else {
      const double sum = row_sum(n, [&](int64_t j) { return double(g[j]) * double(v[j]); });
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) o[j] = float(double(v[j]) * (double(g[j]) - sum));
    }
  }
}

// softmax_grad: dx = y (dy - sum(dy y)); log_softmax_grad: dx = dy - exp(y) sum(dy).
void row_kernel(KernelContext& context) {
  const bool log = std::string(context.schema.name) == "log_softmax_grad";
  const View dy = context.inputs[0], y = context.inputs[1], dx = context.outputs[0];
  if (dx.numel() == 0) return;
  int64_t axis = context.attrs.get_int("axis");
  if (axis < 0) axis += dy.ndim;
  const int64_t n = dy.ndim == 0 ? 1 : dy.shape[axis];
  int64_t inner = 1;
  for (int d = int(axis) + 1; d < dy.ndim; ++d) inner *= dy.shape[d];
  const int64_t lines = dy.numel() / n;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      const T* pdy = dy.ptr<T>();
      const T* py = y.ptr<T>();
      T* out = dx.ptr<T>();
      if constexpr (std::is_same_v<T, float>) {
        if (inner == 1) {  // contiguous f32 rows: softmax_rows_grad_f32
          const int64_t chunk = std::max<int64_t>(1, kParallelWork / n);
          const int64_t chunks = (lines + chunk - 1) / chunk;
#pragma omp parallel for if (chunks > 1) schedule(static)
          for (int64_t c = 0; c < chunks; ++c) {
            const int64_t first = c * chunk, count = std::min(chunk, lines - first);
            softmax_rows_grad_f32(pdy + first * n, py + first * n, out + first * n, count, n, log);
          }
          return;
        }
      }
#pragma omp parallel for if (lines * n > kParallelWork) schedule(static)
      for (int64_t line = 0; line < lines; ++line) {
        const int64_t base = line / inner * n * inner + line % inner;
        double sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + j * inner;
          sum += log ? double(load(pdy + at)) : double(load(pdy + at)) * double(load(py + at));
        }
        for (int64_t j = 0; j < n; ++j) {
          const int64_t at = base + j * inner;
          const double g = load(pdy + at), v = load(py + at);
          store(out + at, log ? g - std::exp(v) * sum : v * (g - sum));
        }
      }
    });
  });
}

// Throws OUT_OF_RANGE naming |op|, the first bad index and the bound.
template <typename I>
void check_indices(const char* op, const I* index, int64_t count, int64_t bound) {
  for (int64_t i = 0; i < count; ++i) {
    if (index[i] < 0 || index[i] >= bound) {
      throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE,
                            std::string(op) + ": index " + std::to_string(index[i]) + " at " +
                                std::to_string(i) + " is out of range [0, " +
                                std::to_string(bound) + ")");
    }
  }
}

// Calls |f(I{})| with the index type of |index| (i32 or i64).
template <typename F>
void with_index(const View& index, F&& f) {
  if (index.dtype == dtype::i64) {
    f(int64_t{});
  } else {
    f(int32_t{});
  }
}

// dweight[v, :] = sum of dy[p, :] over the p with index[p] = v, summed in double.
void embedding_grad_kernel(KernelContext& context) {
  const View dy = context.inputs[0], index = context.inputs[1], dw = context.outputs[0];
  const int64_t rows = dw.shape[0], width = dw.shape[1], count = index.numel();
  if (dw.numel() == 0) return;
  with_float(dw.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      with_index(index, [&](auto index_tag) {
        using I = decltype(index_tag);
        const I* idx = index.ptr<I>();
        check_indices("embedding_grad", idx, count, rows);
        std::vector<double> sum(size_t(rows * width), 0.0);
        const T* g = dy.ptr<T>();
        for (int64_t p = 0; p < count; ++p) {
          double* row = sum.data() + int64_t(idx[p]) * width;
          for (int64_t d = 0; d < width; ++d) row[d] += double(load(g + p * width + d));
        }
        T* out = dw.ptr<T>();
        for (int64_t i = 0; i < rows * width; ++i) store(out + i, sum[size_t(i)]);
      });
    });
  });
}

// dlogits[n, :] = g_n (softmax(logits[n, :]) - onehot(target[n])).
void cross_entropy_grad_kernel(KernelContext& context) {
  const View dloss = context.inputs[0], logits = context.inputs[1], target = context.inputs[2];
  const View dx = context.outputs[0];
  const std::string reduction = context.attrs.get_string("reduction");
  const int64_t rows = logits.shape[0], classes = logits.shape[1];
  if (dx.numel() == 0) return;
  const int mode = reduction == "none" ? 0 : reduction == "sum" ? 1 : 2;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      with_index(target, [&](auto index_tag) {
        using I = decltype(index_tag);
        const I* t = target.ptr<I>();
        check_indices("cross_entropy_grad", t, rows, classes);
        const T* x = logits.ptr<T>();
        const T* dl = dloss.ptr<T>();
        T* out = dx.ptr<T>();
#pragma omp parallel for if (rows * classes > kParallelWork) schedule(static)
        for (int64_t r = 0; r < rows; ++r) {
          const double g = mode == 0   ? double(load(dl + r))
                           : mode == 1 ? double(load(dl))
                                       : double(load(dl)) / double(rows);
          const T* row = x + r * classes;
          double max = load(row);
          for (int64_t j = 1; j < classes; ++j) {
            const double v = load(row + j);
            if (v > max || std::isnan(v)) max = std::isnan(max) ? max : v;
          }
          double sum = 0;
          for (int64_t j = 0; j < classes; ++j) sum += std::exp(double(load(row + j)) - max);
          for (int64_t j = 0; j < classes; ++j) {
            const double p = std::exp(double(load(row + j)) - max) / sum;
            store(out + r * classes + j, g * (p - (j == int64_t(t[r]) ? 1.0 : 0.0)));
          }
        }
      });
    });
  });
}

// rotary_embedding's rotation transposed: each pair turned back by its angle.
void rotary_grad_kernel(KernelContext& context) {
  const View dy = context.inputs[0], cos = context.inputs[1], sin = context.inputs[2];
  const View dx = context.outputs[0];
  const bool interleaved = context.attrs.get_bool("interleaved");
  if (dx.numel() == 0) return;
  const int64_t d = dy.shape[dy.ndim - 1], positions = dy.shape[dy.ndim - 2], half = d / 2;
  const int64_t rows = dy.numel() / d;
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
#pragma omp parallel for if (rows * d > kParallelWork) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        const T* in = dy.ptr<T>() + r * d;
        T* out = dx.ptr<T>() + r * d;
        const T* c = cos.ptr<T>() + r % positions * half;
        const T* s = sin.ptr<T>() + r % positions * half;
        for (int64_t i = 0; i < half; ++i) {
          const int64_t first = interleaved ? 2 * i : i,
                        second = interleaved ? 2 * i + 1 : i + half;
          const compute_t<T> g1 = load(in + first), g2 = load(in + second), ci = load(c + i),
                             si = load(s + i);
          store(out + first, g1 * ci + g2 * si);
          store(out + second, g2 * ci - g1 * si);
        }
      }
    });
  });
}

}  // namespace

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  const auto two = same_signatures(ops::kFloats, 2, 1);
  for (const char* op : {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"}) {
    register_op(registrar, op, &pointwise_kernel, two, 0, table);
  }
  register_op(registrar, "softmax_grad", &row_kernel, two, 0, table);
  register_op(registrar, "log_softmax_grad", &row_kernel, two, 0, table);
  std::vector<std::vector<DLDataType>> embedding, cross_entropy;
  for (DLDataType t : ops::dtypes_in(ops::kFloats)) {
    for (DLDataType i : {dtype::i32, dtype::i64}) {
      embedding.push_back({t, i, t});
      cross_entropy.push_back({t, t, i, t});
    }
  }
  register_op(registrar, "embedding_grad", &embedding_grad_kernel, embedding, 0, table);
  register_op(registrar, "cross_entropy_grad", &cross_entropy_grad_kernel, cross_entropy, 0, table);
  register_op(registrar, "rotary_embedding_grad", &rotary_grad_kernel,
              same_signatures(ops::kFloats, 3, 1), 0, table);
}

}  // namespace oar::cpu
