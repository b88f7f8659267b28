// Neural-network kernels. matmul and conv2d (im2col) run on OpenBLAS
// sgemm/dgemm; softmax, norms, pooling and cross entropy are loops
// parallelised with OpenMP (attention and rotary embedding: attention.cc).
// f16 and bf16 go through f32 and are rounded once, when the result is
// stored. README.md says why.
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "kernels/blas.h"
#include "kernels/im2col.h"
#include "kernels/kernel.h"
#include "kernels/simd.h"
#include "kernels/vmath.h"

// The f32 row loops below are OAR_CPU_WIDEST_SIMD (kernels/simd.h).

namespace oar::cpu {
namespace {

// Element offset in |t| of the matrix that the |linear|-th matrix of |y|
// reads; |t|'s batch dimensions broadcast against |y|'s (NumPy rules).
int64_t batch_offset(const View& t, const View& y, int64_t linear) {
  int64_t offset = 0;
  for (int d = y.ndim - 3, td = t.ndim - 3; d >= 0; --d, --td) {
    int64_t index = linear % y.shape[d];
    linear /= y.shape[d];
    if (td >= 0 && t.shape[td] != 1) offset += index * t.strides[td];
  }
  return offset;
}

int64_t product(const View& v, int begin, int end) {
  int64_t n = 1;
  for (int d = begin; d < end; ++d) n *= v.shape[d];
  return n;
}

// --- matmul ------------------------------------------------------------------

struct MatmulShape {
  int64_t m, n, k, batch;
  bool ta, tb;
  bool fold;  // b is one matrix and a is not transposed: one gemm of batch * m rows
};

template <typename T>
void matmul_run(View a, View b, View y, MatmulShape s) {
  using F = blas_t<T>;
  std::vector<F> a_buffer, b_buffer, y_buffer;
  const F* pa = to_blas(a.ptr<T>(), a.numel(), a_buffer);
  const F* pb = to_blas(b.ptr<T>(), b.numel(), b_buffer);
  F* py = blas_output(y.ptr<T>(), y.numel(), y_buffer);
  if (s.fold) {
    parallel_gemm(false, s.tb, s.batch * s.m, s.n, s.k, F(1), pa, pb, F(0), py);
  } else if (s.batch >= omp_get_max_threads() && s.batch * s.m * s.n * s.k >= kParallelGemm) {
    // One matrix per thread at a time.
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < s.batch; ++i) {
      gemm(s.ta, s.tb, s.m, s.n, s.k, F(1), pa + batch_offset(a, y, i), pb + batch_offset(b, y, i),
           F(0), py + i * s.m * s.n);
    }
  } else {
    for (int64_t i = 0; i < s.batch; ++i) {
      parallel_gemm(s.ta, s.tb, s.m, s.n, s.k, F(1), pa + batch_offset(a, y, i),
                    pb + batch_offset(b, y, i), F(0), py + i * s.m * s.n);
    }
  }
  from_blas(py, y.ptr<T>(), y.numel());
}

void matmul_kernel(KernelContext& context) {
  View a = context.inputs[0], b = context.inputs[1], y = context.outputs[0];
  MatmulShape s{};
  s.ta = context.attrs.get_bool("transpose_a");
  s.tb = context.attrs.get_bool("transpose_b");
  s.m = y.shape[y.ndim - 2];
  s.n = y.shape[y.ndim - 1];
  s.k = a.shape[s.ta ? a.ndim - 2 : a.ndim - 1];
  if (y.numel() == 0) return;
  s.batch = y.numel() / (s.m * s.n);
  s.fold = !s.ta && b.numel() == s.k * s.n && a.numel() == s.batch * s.m * s.k;
  require_blas_sizes("matmul", {s.fold ? s.batch * s.m : s.m, s.n, s.k});
  with_float(a.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { matmul_run<T>(a, b, y, s); });
  });
}

// --- softmax, log_softmax, cross_entropy ----------------------------------------

// The largest of x[0], x[stride], ... (n > 0); NaN if any is NaN.
template <typename T>
compute_t<T> line_max(const T* x, int64_t n, int64_t stride) {
  compute_t<T> max = load(x);
  for (int64_t j = 1; j < n; ++j) {
    compute_t<T> v = load(x + j * stride);
    if (v > max || std::isnan(v)) max = v;
  }
  return max;
}

// y = softmax or log_softmax of the line x[0], x[stride], ... (|y| may be |x|):
// the maximum is subtracted before exp, so no finite input overflows.
template <typename In, typename Out>
void softmax_line(const In* x, Out* y, int64_t n, int64_t stride, bool log) {
  if (n == 0) return;
  using C = compute_t<In>;
  C max = line_max(x, n, stride);
  double sum = 0;
  for (int64_t j = 0; j < n; ++j) sum += std::exp(load(x + j * stride) - max);
  if (log) {
    // (x - max) - log(sum), not x - (max + log(sum)): max + log(sum) rounded
    // to the element type carries an error of the size of max's spacing,
    // larger than the result's own for logits in the thousands.
    const double log_sum = std::log(sum);
    for (int64_t j = 0; j < n; ++j) {
      store(y + j * stride, double(load(x + j * stride) - max) - log_sum);
    }
    return;
  }
  C scale = C(1 / sum);
  for (int64_t j = 0; j < n; ++j)
    store(y + j * stride, std::exp(load(x + j * stride) - max) * scale);
}

// softmax_row_f32 over |rows| contiguous rows of |n| (n > 0), on the widest
// SIMD, its sums of exps in vector lanes (exp_shifted_lanes_f32).
OAR_CPU_WIDEST_SIMD void softmax_rows_f32(const float* x, float* y, int64_t rows, int64_t n,
                                          bool log) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * n;
    float* out = y + r * n;
    const float max = row_max_f32(in, n);
    if (log) {
      const double log_sum = std::log(exp_shifted_lanes_f32<false>(in, nullptr, n, max));
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) out[j] = float(double(in[j] - max) - log_sum);
    } else {
      const float scale = float(1 / exp_shifted_lanes_f32<true>(in, out, n, max));
#pragma omp simd
      for (int64_t j = 0; j < n; ++j) out[j] *= scale;
    }
  }
}

void softmax_kernel(KernelContext& context) {
  View x = context.inputs[0], y = context.outputs[0];
  bool log = std::string(context.schema.name) == "log_softmax";
  int64_t axis = context.attrs.get_int("axis");
  if (axis < 0) axis += x.ndim;
  if (x.numel() == 0) return;
  // A scalar is one line of one element.
  int64_t n = x.ndim == 0 ? 1 : x.shape[axis];
  int64_t inner = x.ndim == 0 ? 1 : product(x, int(axis) + 1, x.ndim);
  int64_t lines = x.numel() / n;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      const T* px = x.ptr<T>();
      T* py = y.ptr<T>();
      if constexpr (std::is_same_v<T, float>) {
        if (inner == 1) {
          // Contiguous rows: the vectorized rows, in chunks handed out as
          // threads ask (schedule(dynamic)): on a loaded machine, a thread
          // that waits for a core leaves its share to the others. A row's
          // result does not depend on which thread computes it.
          const int64_t chunk = std::max<int64_t>(1, kParallelWork / n);
          const int64_t chunks = (lines + chunk - 1) / chunk;
#pragma omp parallel for if (chunks > 1) schedule(dynamic)
          for (int64_t c = 0; c < chunks; ++c) {
            const int64_t first = c * chunk, count = std::min(chunk, lines - first);
            softmax_rows_f32(px + first * n, py + first * n, count, n, log);
          }
          return;
        }
      }
#pragma omp parallel for if (lines * n > kParallelWork)
      for (int64_t line = 0; line < lines; ++line) {
        int64_t base = line / inner * n * inner + line % inner;
        softmax_line(px + base, py + base, n, inner, log);
      }
    });
  });
}

enum class Reduction { kMean, kSum, kNone };

template <typename T, typename I>
void cross_entropy_run(View logits, View target, View loss, Reduction reduction) {
  int64_t rows = logits.shape[0], classes = logits.shape[1];
  const T* x = logits.ptr<T>();
  const I* t = target.ptr<I>();
  for (int64_t r = 0; r < rows; ++r) {
    if (t[r] < 0 || t[r] >= classes) {
      throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE, "cross_entropy: target[" + std::to_string(r) +
                                                         "] = " + std::to_string(t[r]) +
                                                         " is outside [0, " +
                                                         std::to_string(classes) + ")");
    }
  }
  std::vector<double> losses(static_cast<size_t>(rows));
#pragma omp parallel for if (rows * classes > kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const T* row = x + r * classes;
    double max = line_max(row, classes, 1), sum = 0;
    for (int64_t j = 0; j < classes; ++j) sum += std::exp(load(row + j) - max);
    losses[size_t(r)] = max + std::log(sum) - load(row + t[r]);
  }
  T* out = loss.ptr<T>();
  if (reduction == Reduction::kNone) {
    for (int64_t r = 0; r < rows; ++r) store(out + r, losses[size_t(r)]);
    return;
  }
  double total = 0;
  for (double l : losses) total += l;
  // A mean over no rows is 0 / 0 = NaN, as in PyTorch.
  store(out, reduction == Reduction::kSum ? total : total / double(rows));
}

void cross_entropy_kernel(KernelContext& context) {
  View logits = context.inputs[0], target = context.inputs[1], loss = context.outputs[0];
  std::string name = context.attrs.get_string("reduction");
  Reduction reduction = name == "sum"    ? Reduction::kSum
                        : name == "none" ? Reduction::kNone
                                         : Reduction::kMean;
  bool wide = target.dtype == dtype::i64;
  with_float(logits.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      if (wide) {
        cross_entropy_run<T, int64_t>(logits, target, loss, reduction);
      } else {
        cross_entropy_run<T, int32_t>(logits, target, loss, reduction);
      }
    });
  });
}

// --- layer_norm, rms_norm, batch_norm ----------------------------------------

// The sums of x[0..n) and of its squares, x shifted by -|shift|: each of
// kSumLanes vector lanes sums at most kLaneTerms values in f32, then adds
// them into double lanes (as exp_shifted_lanes_f32 in vmath.h).
[[gnu::always_inline]] inline void shifted_sums_f32(const float* x, int64_t n, float shift,
                                                    double& sum, double& squares) {
  double total[kSumLanes] = {}, total_squares[kSumLanes] = {};
  int64_t j = 0;
  while (n - j >= kSumLanes) {
    float part[kSumLanes] = {}, part_squares[kSumLanes] = {};
    const int64_t end = j + std::min((n - j) / kSumLanes, kLaneTerms) * kSumLanes;
    for (; j < end; j += kSumLanes) {
#pragma omp simd
      for (int64_t l = 0; l < kSumLanes; ++l) {
        const float v = x[j + l] - shift;
        part[l] += v;
        part_squares[l] += v * v;
      }
    }
#pragma omp simd
    for (int64_t l = 0; l < kSumLanes; ++l) {
      total[l] += double(part[l]);
      total_squares[l] += double(part_squares[l]);
    }
  }
  sum = 0;
  squares = 0;
  for (int64_t l = 0; l < kSumLanes; ++l) {
    sum += total[l];
    squares += total_squares[l];
  }
  for (; j < n; ++j) {
    const double v = x[j] - shift;
    sum += v;
    squares += v * v;
  }
}

// layer_norm (rms_norm with |rms|, |b| null) of |rows| contiguous f32 rows of
// |d|, each read from cache after its first pass: the mean in double from f32
// block sums, then the variance of the row less the mean's f32 rounding
// (exact for values near the mean), then one multiply-add per element.
OAR_CPU_WIDEST_SIMD void norm_rows_f32(const float* x, const float* w, const float* b, float* y,
                                       int64_t rows, int64_t d, double eps, bool rms) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* in = x + r * d;
    float* out = y + r * d;
    double sum = 0, squares = 0;
    float mean = 0;
    if (!rms) {
      shifted_sums_f32(in, d, 0, sum, squares);
      mean = float(sum / double(d));
    }
    shifted_sums_f32(in, d, mean, sum, squares);
    // |rest|: the mean of x - |mean| (|mean|'s rounding and the first sum's).
    const double rest = rms ? 0 : sum / double(d);
    const float inv = float(1 / std::sqrt(squares / double(d) - rest * rest + eps));
    const float shift = float(rest);
    if (b != nullptr) {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) out[j] = (in[j] - mean - shift) * inv * w[j] + b[j];
    } else {
#pragma omp simd
      for (int64_t j = 0; j < d; ++j) out[j] = (in[j] - mean - shift) * inv * w[j];
    }
  }
}

// layer_norm over the last dimension; rms_norm is the same with the mean held
// at 0 and no bias (|bias|.data null). f32 runs norm_rows_f32 in chunks
// of rows; the other dtypes accumulate in double.
template <typename T>
void norm_run(View x, View weight, View bias, View y, double eps, bool rms) {
  int64_t d = x.shape[x.ndim - 1], rows = x.numel() / d;
  if constexpr (std::is_same_v<T, float>) {
    const int64_t chunk = std::max<int64_t>(1, kParallelWork / d);
    const int64_t chunks = (rows + chunk - 1) / chunk;
    const float *px = x.ptr<float>(), *w = weight.ptr<float>(), *b = bias.ptr<float>();
    float* py = y.ptr<float>();
#pragma omp parallel for if (chunks > 1) schedule(dynamic)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t first = c * chunk, count = std::min(chunk, rows - first);
      norm_rows_f32(px + first * d, w, b, py + first * d, count, d, eps, rms);
    }
    return;
  }
  const T* w = weight.ptr<T>();
  const T* b = bias.ptr<T>();
#pragma omp parallel for if (x.numel() > kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const T* in = x.ptr<T>() + r * d;
    T* out = y.ptr<T>() + r * d;
    double mean = 0, var = 0;
    if (!rms) {
#pragma omp simd reduction(+ : mean)
      for (int64_t j = 0; j < d; ++j) mean += load(in + j);
      mean /= double(d);
    }
#pragma omp simd reduction(+ : var)
    for (int64_t j = 0; j < d; ++j) {
      double centered = load(in + j) - mean;
      var += centered * centered;
    }
    double inv = 1 / std::sqrt(var / double(d) + eps);
    for (int64_t j = 0; j < d; ++j) {
      double v = (load(in + j) - mean) * inv * load(w + j);
      store(out + j, b != nullptr ? v + load(b + j) : v);
    }
  }
}

void norm_kernel(KernelContext& context) {
  bool rms = std::string(context.schema.name) == "rms_norm";
  View x = context.inputs[0], weight = context.inputs[1], y = context.outputs[0];
  View bias = rms ? View{} : context.inputs[2];
  double eps = context.attrs.get_float("eps");
  if (x.numel() == 0) return;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { norm_run<T>(x, weight, bias, y, eps, rms); });
  });
}

void batch_norm_kernel(KernelContext& context) {
  std::array<View, 5> in;
  for (size_t i = 0; i < in.size(); ++i) in[i] = context.inputs[i];
  View y = context.outputs[0];
  double eps = context.attrs.get_float("eps");
  if (y.numel() == 0) return;
  int64_t channels = y.shape[1], planes = y.shape[0] * channels, inner = y.numel() / planes;
  with_float(y.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      const T *x = in[0].ptr<T>(), *mean = in[1].ptr<T>(), *var = in[2].ptr<T>();
      const T *w = in[3].ptr<T>(), *b = in[4].ptr<T>();
      T* out = y.ptr<T>();
#pragma omp parallel for if (planes * inner > kParallelWork)
      for (int64_t p = 0; p < planes; ++p) {
        int64_t c = p % channels;
        double m = load(mean + c), scale = load(w + c) / std::sqrt(load(var + c) + eps);
        double shift = load(b + c);
        for (int64_t i = p * inner; i < (p + 1) * inner; ++i) {
          store(out + i, (load(x + i) - m) * scale + shift);
        }
      }
    });
  });
}

// --- conv2d, max_pool2d, avg_pool2d --------------------------------------------

// Sizes of a 2-D window operation over x [N, C, H, W] giving [N, O, OH, OW].
struct Window {
  int64_t n, c, h, w, o, oh, ow;
  std::array<int64_t, 2> kernel{}, stride{}, padding{}, dilation{1, 1};
  int64_t groups = 1;
};

Window window_of(const View& x, const View& y, std::array<int64_t, 2> kernel,
                 const ops::Attrs& attrs) {
  Window s{x.shape[0], x.shape[1], x.shape[2], x.shape[3], y.shape[1], y.shape[2], y.shape[3]};
  s.kernel = kernel;
  s.stride = attrs.get_pair("stride", {kernel[0], kernel[1]});
  s.padding = attrs.get_pair("padding", {0, 0});
  return s;
}

// The geometry im2col_row (kernels/im2col.h) reads x through.
Im2col im2col_of(const Window& s) {
  return {s.h, s.w, s.oh, s.ow, s.kernel[0], s.kernel[1], s.stride, s.padding, s.dilation};
}

// col[(c, i, j), (oh, ow)] for all output rows, shared out across OpenMP's
// threads.
template <typename F>
void im2col(const F* x, const Window& s, int64_t channels, F* col) {
  int64_t rows = channels * s.kernel[0] * s.kernel[1], plane = s.oh * s.ow;
  const Im2col geometry = im2col_of(s);
#pragma omp parallel for if (rows * plane > kParallelWork)
  for (int64_t r = 0; r < rows; ++r) im2col_row(x, geometry, r, 0, s.oh, col + r * plane);
}

// Columns of col a thread builds at a time: about kConvTile elements, whole
// output rows, so that its col tile stays in the core's cache for the GEMM.
constexpr int64_t kConvTile = int64_t(1) << 16;

// Per image and group: y_g [O/g, OH*OW] = w_g [O/g, C/g*kH*kW] x col [C/g*kH*kW, OH*OW].
// On one thread, or with at least as many (image, group) pairs as threads,
// each thread takes whole pairs (its own col tiles, one-thread GEMMs); else
// the pairs run in turn with im2col and the GEMM shared out.
template <typename T>
void conv_run(View x, View weight, View bias, View y, Window s) {
  using F = blas_t<T>;
  std::vector<F> x_buffer, w_buffer, b_buffer, y_buffer, col;
  const F* px = to_blas(x.ptr<T>(), x.numel(), x_buffer);
  const F* pw = to_blas(weight.ptr<T>(), weight.numel(), w_buffer);
  F* py = blas_output(y.ptr<T>(), y.numel(), y_buffer);
  int64_t cg = s.c / s.groups, og = s.o / s.groups, depth = cg * s.kernel[0] * s.kernel[1];
  int64_t plane = s.oh * s.ow;
  // A 1x1 kernel with unit stride and no padding reads x as its own col matrix.
  bool direct = depth == cg && s.stride == std::array<int64_t, 2>{1, 1} &&
                s.padding == std::array<int64_t, 2>{0, 0};
  const int64_t pairs = s.n * s.groups, threads = omp_get_max_threads();
  const bool per_thread =
      threads == 1 || (pairs >= threads && pairs * og * plane * depth >= kParallelGemm);
  // Output rows per col tile (per-thread path).
  const int64_t tile_rows = std::clamp<int64_t>(kConvTile / std::max<int64_t>(depth * s.ow, 1), 1,
                                                std::max<int64_t>(s.oh, 1));
  if (!direct) {
    col.resize(size_t(per_thread ? threads * depth * tile_rows * s.ow : depth * plane));
  }
  if (per_thread) {
    F* cols = col.data();
    const Im2col geometry = im2col_of(s);
#pragma omp parallel for num_threads(int(threads)) schedule(dynamic)
    for (int64_t pair = 0; pair < pairs; ++pair) {
      const int64_t n = pair / s.groups, g = pair % s.groups;
      const F* xg = px + (n * s.c + g * cg) * s.h * s.w;
      const F* wg = pw + g * og * depth;
      F* yg = py + (n * s.o + g * og) * plane;
      if (direct) {
        gemm(false, false, og, plane, depth, F(1), wg, xg, F(0), yg);
        continue;
      }
      F* mine = cols + omp_get_thread_num() * depth * tile_rows * s.ow;
      for (int64_t oh0 = 0; oh0 < s.oh; oh0 += tile_rows) {
        const int64_t oh1 = std::min(s.oh, oh0 + tile_rows), width = (oh1 - oh0) * s.ow;
        for (int64_t r = 0; r < depth; ++r) {
          im2col_row(xg, geometry, r, oh0, oh1, mine + r * width);
        }
        gemm_ld(false, false, og, width, depth, F(1), wg, depth, mine, width, F(0), yg + oh0 * s.ow,
                plane);
      }
    }
  } else {
    for (int64_t n = 0; n < s.n; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const F* xg = px + (n * s.c + g * cg) * s.h * s.w;
        if (!direct) im2col(xg, s, cg, col.data());
        parallel_gemm(false, false, og, plane, depth, F(1), pw + g * og * depth,
                      direct ? xg : col.data(), F(0), py + (n * s.o + g * og) * plane);
      }
    }
  }
  if (bias.data != nullptr) {
    const F* pb = to_blas(bias.ptr<T>(), s.o, b_buffer);
#pragma omp parallel for if (y.numel() > kParallelWork)
    for (int64_t p = 0; p < s.n * s.o; ++p) {
      for (int64_t i = p * plane; i < (p + 1) * plane; ++i) py[i] += pb[p % s.o];
    }
  }
  from_blas(py, y.ptr<T>(), y.numel());
}

void conv2d_kernel(KernelContext& context) {
  View x = context.inputs[0], weight = context.inputs[1], y = context.outputs[0];
  View bias = context.inputs.size() > 2 ? context.inputs[2] : View{};
  Window s = window_of(x, y, {weight.shape[2], weight.shape[3]}, context.attrs);
  s.stride = context.attrs.get_pair("stride", {1, 1});
  s.dilation = context.attrs.get_pair("dilation", {1, 1});
  s.groups = context.attrs.get_int("groups");
  if (y.numel() == 0) return;
  require_blas_sizes("conv2d", {s.o, s.oh * s.ow, weight.numel() / s.o});
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { conv_run<T>(x, weight, bias, y, s); });
  });
}

// Pooling over each [H, W] plane. Padding never wins a max; an average divides
// by kH * kW, or by the in-bounds count without count_include_pad.
template <typename T>
void pool_run(View x, View y, Window s, bool max, bool include_pad) {
  int64_t rows = s.n * s.c * s.oh;
#pragma omp parallel for if (rows * s.ow * s.kernel[0] * s.kernel[1] > kParallelWork)
  for (int64_t r = 0; r < rows; ++r) {
    const T* plane = x.ptr<T>() + r / s.oh * s.h * s.w;
    T* out = y.ptr<T>() + r * s.ow;
    int64_t h0 = r % s.oh * s.stride[0] - s.padding[0];
    int64_t h_begin = std::max<int64_t>(h0, 0), h_end = std::min(h0 + s.kernel[0], s.h);
    for (int64_t ow = 0; ow < s.ow; ++ow) {
      int64_t w0 = ow * s.stride[1] - s.padding[1];
      int64_t w_begin = std::max<int64_t>(w0, 0), w_end = std::min(w0 + s.kernel[1], s.w);
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      for (int64_t h = h_begin; h < h_end; ++h) {
        for (int64_t w = w_begin; w < w_end; ++w) {
          double v = load(plane + h * s.w + w);
          if (v > best || std::isnan(v)) best = std::isnan(best) ? best : v;
          sum += v;
        }
      }
      int64_t count =
          include_pad ? s.kernel[0] * s.kernel[1] : (h_end - h_begin) * (w_end - w_begin);
      store(out + ow, max ? best : sum / double(count));
    }
  }
}

void pool_kernel(KernelContext& context) {
  View x = context.inputs[0], y = context.outputs[0];
  bool max = std::string(context.schema.name) == "max_pool2d";
  bool include_pad = !max && context.attrs.get_bool("count_include_pad");
  Window s = window_of(x, y, context.attrs.get_pair("kernel_size", {}), context.attrs);
  if (y.numel() == 0) return;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { pool_run<T>(x, y, s, max, include_pad); });
  });
}

}  // namespace

void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  auto same = [](size_t inputs) { return same_signatures(ops::kFloats, inputs, 1); };
  auto conv = same(2);
  for (auto& signature : same(3)) conv.push_back(signature);
  std::vector<std::vector<DLDataType>> cross_entropy;
  for (DLDataType t : ops::dtypes_in(ops::kFloats)) {
    cross_entropy.push_back({t, dtype::i32, t});
    cross_entropy.push_back({t, dtype::i64, t});
  }
  register_op(registrar, "matmul", &matmul_kernel, same(2), 0, table);
  register_op(registrar, "softmax", &softmax_kernel, same(1), 0, table);
  register_op(registrar, "log_softmax", &softmax_kernel, same(1), 0, table);
  register_op(registrar, "layer_norm", &norm_kernel, same(3), 0, table);
  register_op(registrar, "rms_norm", &norm_kernel, same(2), 0, table);
  register_op(registrar, "batch_norm", &batch_norm_kernel, same(5), 0, table);
  register_op(registrar, "conv2d", &conv2d_kernel, conv, 0, table);
  register_op(registrar, "max_pool2d", &pool_kernel, same(1), 0, table);
  register_op(registrar, "avg_pool2d", &pool_kernel, same(1), 0, table);
  register_op(registrar, "cross_entropy", &cross_entropy_kernel, cross_entropy, 0, table);
}

}  // namespace oar::cpu
