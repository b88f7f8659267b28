// cpu kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc). Loops in double, one rounding at the store,
// except conv2d's gradients: im2col/col2im around sgemm/dgemm like the forward.
#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "kernels/blas.h"
#include "kernels/im2col.h"
#include "kernels/kernel.h"
#include "kernels/simd.h"

namespace oar::cpu {
namespace {

// The f32 row loops below are OAR_CPU_WIDEST_SIMD (kernels/simd.h).

// No contraction into FMA in the f32 norm gradients below: dx subtracts
// mean(g w) from each g w, and where the row is constant (width one, say)
// the two must cancel exactly; an FMA would subtract the rounded mean from
// the unrounded product and leave its rounding error times 1 / sqrt(eps).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("fp-contract=off")
#endif

// Row sums in f32 over blocks of 16 * |lanes| elements, in |lanes| lanes
// (element j of a block adds to lane j % |lanes|: 16 terms a lane, the
// precision of vmath.h's block sums), each block's lanes added to |lanes|
// double totals, and the totals added in a fixed tree at the end of the row.
// Lanes rather than one accumulator: the adds do not wait on each other's
// latency (|lanes| / 16 AVX-512 registers per sum) and no block ends in a
// horizontal sum; the order is the same whatever the vector width.
template <int64_t lanes>
inline __attribute__((always_inline)) double lanes_total(double* lane) {
  if constexpr (lanes == 1) {
    return lane[0];
  } else {
    // One level of the tree per instantiation: a loop of a fixed length that
    // vectorizes, where a loop over the levels ran scalar with checks.
    constexpr int64_t half = lanes / 2;
#pragma omp simd
    for (int64_t l = 0; l < half; ++l) lane[l] += lane[l + half];
    return lanes_total<half>(lane);
  }
}

// sums[k] (k < |count|) = the sum over j < n of term(j)[k], as above (each
// sum the same whatever the other sums are).
template <int count, int64_t lanes, typename Term>
inline __attribute__((always_inline)) void lane_sums(int64_t n, Term&& term,
                                                     double (&sums)[count]) {
  constexpr int64_t block = 16 * lanes;
  double total[count][lanes] = {};
  for (int64_t begin = 0; begin < n; begin += block) {
    const int64_t end = std::min(begin + block, n);
    float lane[count][lanes] = {};
    int64_t j = begin;
    for (; j + lanes <= end; j += lanes) {
      for (int64_t l = 0; l < lanes; ++l) {
        const std::array<float, count> t = term(j + l);
        for (int k = 0; k < count; ++k) lane[k][l] += t[size_t(k)];
      }
    }
    for (; j < end; ++j) {
      const std::array<float, count> t = term(j);
      for (int k = 0; k < count; ++k) lane[k][(j - begin) % lanes] += t[size_t(k)];
    }
    for (int k = 0; k < count; ++k) {
      for (int64_t l = 0; l < lanes; ++l) total[k][l] += double(lane[k][l]);
    }
  }
  for (int k = 0; k < count; ++k) sums[k] = lanes_total<lanes>(total[k]);
}

// Per row of the f32 norm gradients: dx = inv (g w - mean_g) - xhat mean_gx
// with xhat = (x - m0 - shift) inv and mean_gx = inv mean(g w xhat).
struct NormGradRow {
  float m0, shift, inv, mean_g, mean_gx;
};

// The statistics of f32 rows, as the forward's (nn.cc's norm_rows_f32), in
// two passes. The first: rms_norm the sums of x^2 and g x (g = dy w);
// layer_norm the sum of x, whose mean in double rounded to f32 is m0. The
// second (layer_norm only): the sums of c = x - m0, c^2, g and g c (|shift| =
// mean(c) is m0's rounding, so the variance is mean(c^2) - shift^2 and
// sum(g (x - m)) is sum(g c) - shift sum(g)). rms_norm: m0 and shift 0,
// mean_g 0. A pair of rows sums its two rows' terms in one lane_sums: each
// sum is the same as alone.
template <bool rms>
constexpr int kFirstSums = rms ? 2 : 1;
template <bool rms>
constexpr int64_t kFirstLanes = rms ? 32 : 64;

template <bool rms>
inline __attribute__((always_inline)) std::array<float, 2 * kFirstSums<rms>> first_terms(
    const float* g0, const float* x0, const float* g1, const float* x1, const float* w, int64_t j) {
  if constexpr (rms) {
    const float u = x0[j], v = x1[j];
    return {u * u, g0[j] * w[j] * u, v * v, g1[j] * w[j] * v};
  } else {
    return {x0[j], x1[j]};
  }
}

// A row's statistics from its first pass's sums |first| (and its second pass).
inline __attribute__((always_inline)) NormGradRow rms_row(const double* first, int64_t d,
                                                          double eps) {
  const double s = 1 / std::sqrt(first[0] / double(d) + eps);
  return {0.0f, 0.0f, float(s), 0.0f, float(first[1] * s * s / double(d))};
}
inline __attribute__((always_inline)) NormGradRow layer_row(float m0, const double* sums, int64_t d,
                                                            double eps) {
  const double rest = sums[0] / double(d);
  const double s = 1 / std::sqrt(sums[1] / double(d) - rest * rest + eps);
  return {m0, float(rest), float(s), float(sums[2] / double(d)),
          float((sums[3] - rest * sums[2]) * s * s / double(d))};
}

// The statistics of a pair of rows from their first pass's sums.
template <bool rms>
inline __attribute__((always_inline)) void pair_stats(const double (&first)[2 * kFirstSums<rms>],
                                                      const float* g0, const float* x0,
                                                      const float* g1, const float* x1,
                                                      const float* w, int64_t d, double eps,
                                                      NormGradRow& a, NormGradRow& b) {
  if constexpr (rms) {
    a = rms_row(first, d, eps);
    b = rms_row(first + 2, d, eps);
  } else {
    const float ma = float(first[0] / double(d)), mb = float(first[1] / double(d));
    double sums[8];  // c, c^2, g, g c of each row
    lane_sums<8, 16>(
        d,
        [&](int64_t j) {
          const float ca = x0[j] - ma, ga = g0[j] * w[j], cb = x1[j] - mb, gb = g1[j] * w[j];
          return std::array<float, 8>{ca, ca * ca, ga, ga * ca, cb, cb * cb, gb, gb * cb};
        },
        sums);
    a = layer_row(ma, sums, d, eps);
    b = layer_row(mb, sums + 4, d, eps);
  }
}

// The statistics of one row (the odd row of a group).
template <bool rms>
inline __attribute__((always_inline)) NormGradRow norm_grad_row_stats(const float* gr,
                                                                      const float* xr,
                                                                      const float* w, int64_t d,
                                                                      double eps) {
  if constexpr (rms) {
    double sums[2];  // x^2, g x
    lane_sums<2, 32>(
        d,
        [&](int64_t j) {
          const float v = xr[j];
          return std::array<float, 2>{v * v, gr[j] * w[j] * v};
        },
        sums);
    return rms_row(sums, d, eps);
  } else {
    double sum[1];
    lane_sums<1, 64>(
        d, [&](int64_t j) { return std::array<float, 1>{xr[j]}; }, sum);
    const float m0 = float(sum[0] / double(d));
    double sums[4];  // c, c^2, g, g c
    lane_sums<4, 16>(
        d,
        [&](int64_t j) {
          const float c = xr[j] - m0, g = gr[j] * w[j];
          return std::array<float, 4>{c, c * c, g, g * c};
        },
        sums);
    return layer_row(m0, sums, d, eps);
  }
}

// layer_norm_grad (rms_norm_grad with |rms|) of |rows| contiguous f32 rows of
// |d|, in f32, by pairs of rows: the pair's statistics, then dx, with the
// pair's dy xhat and dy added to the f32 column sums |col_w| and |col_b|
// (layer_norm only; a pair per read and write of the sums). Running the next
// pair's first pass inside the loop that writes dx (so that its wait on L2 or
// L3 would overlap dx's arithmetic) was slower (rms_norm_grad 0.14 -> 0.15
// ms), as was prefetching the next pair's rows during that loop (0.13 -> 0.16).
template <bool rms>
inline __attribute__((always_inline)) void norm_grad_rows_f32(const float* dy, const float* x,
                                                              const float* w, float* dx,
                                                              float* col_w, float* col_b,
                                                              int64_t rows, int64_t d, double eps) {
#if defined(__clang__)
#pragma clang fp contract(off)
#endif
  constexpr int first_count = 2 * kFirstSums<rms>;
  constexpr int64_t first_lanes = kFirstLanes<rms>;
  std::fill(col_w, col_w + d, 0.0f);
  if constexpr (!rms) std::fill(col_b, col_b + d, 0.0f);
  int64_t r = 0;
  for (; r + 2 <= rows; r += 2) {
    const float *x0 = x + r * d, *x1 = x0 + d, *g0 = dy + r * d, *g1 = g0 + d;
    float *out0 = dx + r * d, *out1 = out0 + d;
    double first[first_count];
    lane_sums<first_count, first_lanes>(
        d, [&](int64_t j) { return first_terms<rms>(g0, x0, g1, x1, w, j); }, first);
    NormGradRow a, b;
    pair_stats<rms>(first, g0, x0, g1, x1, w, d, eps, a, b);
    // rms_norm: m0, shift and mean_g are 0, and x - 0 - 0 and g w - 0 are
    // exact, so leaving them out changes no result.
    const auto element = [&](int64_t j) {
      const float ga = g0[j], gb = g1[j];
      if constexpr (rms) {
        const float xa = x0[j] * a.inv, xb = x1[j] * b.inv;
        out0[j] = a.inv * (ga * w[j]) - xa * a.mean_gx;
        out1[j] = b.inv * (gb * w[j]) - xb * b.mean_gx;
        col_w[j] += ga * xa + gb * xb;
      } else {
        const float xa = (x0[j] - a.m0 - a.shift) * a.inv, xb = (x1[j] - b.m0 - b.shift) * b.inv;
        out0[j] = a.inv * (ga * w[j] - a.mean_g) - xa * a.mean_gx;
        out1[j] = b.inv * (gb * w[j] - b.mean_g) - xb * b.mean_gx;
        col_w[j] += ga * xa + gb * xb;
        col_b[j] += ga + gb;
      }
    };
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) element(j);
  }
  if (r < rows) {
    const float *x0 = x + r * d, *g0 = dy + r * d;
    float* out0 = dx + r * d;
    const NormGradRow a = norm_grad_row_stats<rms>(g0, x0, w, d, eps);
#pragma omp simd
    for (int64_t j = 0; j < d; ++j) {
      const float ga = g0[j];
      if constexpr (rms) {
        const float xa = x0[j] * a.inv;
        out0[j] = a.inv * (ga * w[j]) - xa * a.mean_gx;
        col_w[j] += ga * xa;
      } else {
        const float xa = (x0[j] - a.m0 - a.shift) * a.inv;
        out0[j] = a.inv * (ga * w[j] - a.mean_g) - xa * a.mean_gx;
        col_w[j] += ga * xa;
        col_b[j] += ga;
      }
    }
  }
}

OAR_CPU_WIDEST_SIMD void layer_norm_grad_rows_f32(const float* dy, const float* x, const float* w,
                                                  float* dx, float* col_w, float* col_b,
                                                  int64_t rows, int64_t d, double eps) {
  norm_grad_rows_f32<false>(dy, x, w, dx, col_w, col_b, rows, d, eps);
}

OAR_CPU_WIDEST_SIMD void rms_norm_grad_rows_f32(const float* dy, const float* x, const float* w,
                                                float* dx, float* col_w, int64_t rows, int64_t d,
                                                double eps) {
  norm_grad_rows_f32<true>(dy, x, w, dx, col_w, nullptr, rows, d, eps);
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif

// Rows per group: each group's dweight and dbias terms are summed in f32 (16
// terms a column), the groups' sums in double, in group order. Groups are
// fixed by the shape, so the result does not depend on the thread count.
constexpr int64_t kColumnGroup = 16;

// dweight (and dbias, |sums| 2) columns [begin, begin + count) from the
// groups' f32 column sums, added in double in group order.
constexpr int64_t kColumnChunk = 128;
OAR_CPU_WIDEST_SIMD void add_group_columns(const float* columns, int64_t groups, int64_t sums,
                                           int64_t d, int64_t begin, int64_t count, float* dweight,
                                           float* dbias) {
  for (int64_t k = 0; k < sums; ++k) {
    double total[kColumnChunk] = {};
    for (int64_t group = 0; group < groups; ++group) {
      const float* col = columns + (group * sums + k) * d + begin;
#pragma omp simd
      for (int64_t j = 0; j < count; ++j) total[j] += double(col[j]);
    }
    float* out = (k == 0 ? dweight : dbias) + begin;
#pragma omp simd
    for (int64_t j = 0; j < count; ++j) out[j] = float(total[j]);
  }
}

// The f32 norm gradients, in one parallel region: groups of rows
// (norm_grad_rows_f32), then dweight and dbias from the groups' column sums,
// a block of columns per thread (this sum ran serially after the region,
// while the other threads spun at the barrier, counted in the CPU time). The
// groups stay in fixed shares (static): each thread finds its rows of a
// tensor used again in its own L2 (two threads: 1.52-1.57x the forward, and
// 1.76x with dynamic scheduling, which hands them out in turn).
void norm_grad_f32(const float* dy, const float* x, const float* w, float* dx, float* dweight,
                   float* dbias, int64_t rows, int64_t d, double eps, bool rms) {
  const int64_t groups = (rows + kColumnGroup - 1) / kColumnGroup, sums = rms ? 1 : 2;
  std::unique_ptr<float[]> columns(new float[size_t(groups * sums * d)]);
  const int64_t chunks = (d + kColumnChunk - 1) / kColumnChunk;
#pragma omp parallel if (rows * d > kParallelWork)
  {
#pragma omp for schedule(static)
    for (int64_t group = 0; group < groups; ++group) {
      const int64_t first = group * kColumnGroup, count = std::min(kColumnGroup, rows - first);
      float* col = columns.get() + group * sums * d;
      if (rms) {
        rms_norm_grad_rows_f32(dy + first * d, x + first * d, w, dx + first * d, col, count, d,
                               eps);
      } else {
        layer_norm_grad_rows_f32(dy + first * d, x + first * d, w, dx + first * d, col, col + d,
                                 count, d, eps);
      }
    }
#pragma omp for schedule(static)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t begin = chunk * kColumnChunk;
      add_group_columns(columns.get(), groups, sums, d, begin, std::min(kColumnChunk, d - begin),
                        dweight, dbias);
    }
  }
}

// layer_norm_grad (|rms| false) and rms_norm_grad: one pass over the rows (as
// many passes over a row as the forward: mean, variance, output) that gives dx and, per block of
// rows, partial column sums for dweight and dbias (read row by row, as the rows are stored), then
// the blocks' sums added up. The blocks are fixed (not per thread), so the result does not depend
// on the thread count.
template <typename T, bool rms>
void norm_grad_run(View dy, View x, View weight, View dx, View dweight, View dbias, double eps) {
  const int64_t d = x.shape[x.ndim - 1];
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  if constexpr (std::is_same_v<T, float>) {
    norm_grad_f32(dy.ptr<T>(), x.ptr<T>(), weight.ptr<T>(), dx.ptr<T>(), dweight.ptr<T>(),
                  rms ? nullptr : dbias.ptr<T>(), rows, d, eps, rms);
    return;
  } else if constexpr (!std::is_same_v<T, double>) {
    // f16 and bf16: the f32 kernel on f32 copies, each result rounded once.
    const int64_t n = rows * d;
    std::vector<float> in(size_t(2 * n + d)), out(size_t(n + 2 * d));
    for (int64_t i = 0; i < n; ++i) {
      in[size_t(i)] = load(dy.ptr<T>() + i);
      in[size_t(n + i)] = load(x.ptr<T>() + i);
    }
    for (int64_t j = 0; j < d; ++j) in[size_t(2 * n + j)] = load(weight.ptr<T>() + j);
    norm_grad_f32(in.data(), in.data() + n, in.data() + 2 * n, out.data(), out.data() + n,
                  out.data() + n + d, rows, d, eps, rms);
    for (int64_t i = 0; i < n; ++i) store(dx.ptr<T>() + i, out[size_t(i)]);
    for (int64_t j = 0; j < d; ++j) {
      store(dweight.ptr<T>() + j, out[size_t(n + j)]);
      if (!rms) store(dbias.ptr<T>() + j, out[size_t(n + d + j)]);
    }
    return;
  }
  // f64: in double.
  const int64_t blocks = std::min<int64_t>(rows, 32);
  const T* w = weight.ptr<T>();
  std::vector<double> partial_w(size_t(blocks * d), 0.0), partial_b(size_t(blocks * d), 0.0);
#pragma omp parallel for if (x.numel() > kParallelWork) schedule(static)
  for (int64_t block = 0; block < blocks; ++block) {
    double* sum_w = partial_w.data() + block * d;
    double* sum_b = partial_b.data() + block * d;
    for (int64_t r = block * rows / blocks; r < (block + 1) * rows / blocks; ++r) {
      const T* xr = x.ptr<T>() + r * d;
      const T* gr = dy.ptr<T>() + r * d;
      double m = 0;
      if constexpr (!rms) {
#pragma omp simd reduction(+ : m)
        for (int64_t j = 0; j < d; ++j) m += load(xr + j);
        m /= double(d);
      }
      // The variance and both row sums of dx in one pass (they need only m):
      // sum(g (x - m)) s is sum(g xhat).
      double var = 0, mean_g = 0, mean_gx = 0;
#pragma omp simd reduction(+ : var, mean_g, mean_gx)
      for (int64_t j = 0; j < d; ++j) {
        const double centered = load(xr + j) - m, g = double(load(gr + j)) * load(w + j);
        var += centered * centered;
        mean_g += g;
        mean_gx += g * centered;
      }
      const double s = 1 / std::sqrt(var / double(d) + eps);
      mean_g = rms ? 0.0 : mean_g / double(d);
      mean_gx = mean_gx * s / double(d);
      T* out = dx.ptr<T>() + r * d;
      for (int64_t j = 0; j < d; ++j) {
        const double dyj = load(gr + j), xhat = (load(xr + j) - m) * s;
        store(out + j, s * (dyj * load(w + j) - mean_g - xhat * mean_gx));
        sum_w[j] += dyj * xhat;
        if constexpr (!rms) sum_b[j] += dyj;
      }
    }
  }
#pragma omp parallel for if (blocks * d > kParallelWork) schedule(static)
  for (int64_t j = 0; j < d; ++j) {
    double sum_w = 0, sum_b = 0;
    for (int64_t block = 0; block < blocks; ++block) {
      sum_w += partial_w[size_t(block * d + j)];
      sum_b += partial_b[size_t(block * d + j)];
    }
    store(dweight.ptr<T>() + j, sum_w);
    if (!rms) store(dbias.ptr<T>() + j, sum_b);
  }
}

void norm_grad_kernel(KernelContext& context) {
  const bool rms = std::string(context.schema.name) == "rms_norm_grad";
  View dy = context.inputs[0], x = context.inputs[1], weight = context.inputs[2];
  View dx = context.outputs[0], dweight = context.outputs[1];
  View dbias = rms ? View{} : context.outputs[2];
  const double eps = context.attrs.get_float("eps");
  if (dweight.numel() == 0) return;  // D = 0: every output is empty
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] {
      if (rms) {
        norm_grad_run<T, true>(dy, x, weight, dx, dweight, dbias, eps);
      } else {
        norm_grad_run<T, false>(dy, x, weight, dx, dweight, dbias, eps);
      }
    });
  });
}

struct PoolGrad {
  int64_t planes, h, w, oh, ow;
  std::array<int64_t, 2> kernel, stride, padding;
  bool max, include_pad;
};

// Per plane: every window hands its dy to x's positions (max: the first
// maximum in row-major order, a NaN counting as the maximum), accumulated in
// double and stored once.
template <typename T>
void pool_grad_run(View dy, View x, View dx, PoolGrad s) {
#pragma omp parallel for if (s.planes * s.h * s.w > kParallelWork)
  for (int64_t p = 0; p < s.planes; ++p) {
    const T* plane = x.ptr<T>() + p * s.h * s.w;
    const T* g = dy.ptr<T>() + p * s.oh * s.ow;
    std::vector<double> acc(size_t(s.h * s.w), 0.0);
    for (int64_t oh = 0; oh < s.oh; ++oh) {
      const int64_t h0 = oh * s.stride[0] - s.padding[0];
      const int64_t h_begin = std::max<int64_t>(h0, 0), h_end = std::min(h0 + s.kernel[0], s.h);
      for (int64_t ow = 0; ow < s.ow; ++ow) {
        const int64_t w0 = ow * s.stride[1] - s.padding[1];
        const int64_t w_begin = std::max<int64_t>(w0, 0), w_end = std::min(w0 + s.kernel[1], s.w);
        const double value = load(g + oh * s.ow + ow);
        if (s.max) {
          int64_t best = h_begin * s.w + w_begin;
          double best_value = load(plane + best);
          for (int64_t h = h_begin; h < h_end && !std::isnan(best_value); ++h) {
            for (int64_t w = w_begin; w < w_end; ++w) {
              const double v = load(plane + h * s.w + w);
              if (std::isnan(v) || v > best_value) {
                best = h * s.w + w;
                best_value = v;
                if (std::isnan(v)) break;
              }
            }
          }
          acc[size_t(best)] += value;
          continue;
        }
        const int64_t count =
            s.include_pad ? s.kernel[0] * s.kernel[1] : (h_end - h_begin) * (w_end - w_begin);
        const double share = value / double(count);
        for (int64_t h = h_begin; h < h_end; ++h) {
          for (int64_t w = w_begin; w < w_end; ++w) acc[size_t(h * s.w + w)] += share;
        }
      }
    }
    T* out = dx.ptr<T>() + p * s.h * s.w;
    for (int64_t i = 0; i < s.h * s.w; ++i) store(out + i, acc[size_t(i)]);
  }
}

void pool_grad_kernel(KernelContext& context) {
  View dy = context.inputs[0], x = context.inputs[1], dx = context.outputs[0];
  PoolGrad s{};
  s.max = std::string(context.schema.name) == "max_pool2d_grad";
  s.include_pad = !s.max && context.attrs.get_bool("count_include_pad");
  s.planes = x.shape[0] * x.shape[1];
  s.h = x.shape[2];
  s.w = x.shape[3];
  s.oh = dy.shape[2];
  s.ow = dy.shape[3];
  s.kernel = context.attrs.get_pair("kernel_size", {});
  s.stride = context.attrs.get_pair("stride", {s.kernel[0], s.kernel[1]});
  s.padding = context.attrs.get_pair("padding", {0, 0});
  if (dx.numel() == 0) return;
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { pool_grad_run<T>(dy, x, dx, s); });
  });
}

struct ConvGrad {
  int64_t n, c, h, w, o, kh, kw, oh, ow, groups;
  std::array<int64_t, 2> stride, padding, dilation;
};

ConvGrad conv_grad_of(const View& x_like, const View& w_like, const View& dy,
                      const ops::Attrs& attrs) {
  ConvGrad s{};
  s.n = x_like.shape[0];
  s.c = x_like.shape[1];
  s.h = x_like.shape[2];
  s.w = x_like.shape[3];
  s.o = w_like.shape[0];
  s.kh = w_like.shape[2];
  s.kw = w_like.shape[3];
  s.oh = dy.shape[2];
  s.ow = dy.shape[3];
  s.groups = attrs.get_int("groups");
  s.stride = attrs.get_pair("stride", {1, 1});
  s.padding = attrs.get_pair("padding", {0, 0});
  s.dilation = attrs.get_pair("dilation", {1, 1});
  return s;
}

// x's im2col matrix [C/g * kH * kW, OH * OW] of one image and group (|x| at
// its [C/g, H, W] planes), a row at a time (kernels/im2col.h). Shared out
// across OpenMP's threads unless called inside a parallel region.
template <typename F>
void im2col_grad(const ConvGrad& s, int64_t channels, const F* x, F* col) {
  const int64_t rows = channels * s.kh * s.kw, plane = s.oh * s.ow;
  const Im2col geometry{s.h, s.w, s.oh, s.ow, s.kh, s.kw, s.stride, s.padding, s.dilation};
#pragma omp parallel for if (rows * plane > kParallelWork && !omp_in_parallel())
  for (int64_t r = 0; r < rows; ++r) im2col_row(x, geometry, r, 0, s.oh, col + r * plane);
}

// The (image, group) pairs of a convolution gradient: with at least as many
// pairs (or chunks) as threads, each thread takes whole ones with its own
// scratch and one-thread GEMMs, in one parallel region; else they run in
// turn with the GEMM and the loops shared out (parallel_gemm, im2col and
// col2im check omp_in_parallel).
inline bool per_thread_work(int64_t units, int64_t multiply_adds) {
  const int64_t threads = omp_get_max_threads();
  return threads > 1 && units >= threads && multiply_adds >= kParallelGemm;
}

// out [C/g, H, W] = the sum of every column entry at the x position it was
// read from (col2im). A row of col only touches its own channel plane, so the
// add runs per channel.
template <typename F>
void col2im_add(const ConvGrad& s, int64_t channels, const F* col, F* out_planes) {
  const int64_t plane = s.oh * s.ow, taps = s.kh * s.kw;
#pragma omp parallel for if (channels * taps * plane > kParallelWork && !omp_in_parallel())
  for (int64_t c = 0; c < channels; ++c) {
    F* out = out_planes + c * s.h * s.w;
    std::fill(out, out + s.h * s.w, F(0));
    for (int64_t t = 0; t < taps; ++t) {
      const int64_t p = t / s.kw, q = t % s.kw;
      const F* in = col + (c * taps + t) * plane;
      // ow in [lo, hi) lands inside the row: 0 <= ow * sw + shift < w (the
      // same adds in the same order as a bounds check per element).
      const int64_t sw = s.stride[1], shift = q * s.dilation[1] - s.padding[1];
      const int64_t lo = std::min(s.ow, shift >= 0 ? 0 : (-shift + sw - 1) / sw);
      const int64_t hi =
          std::max(lo, std::min(s.ow, s.w - shift <= 0 ? 0 : (s.w - shift + sw - 1) / sw));
      for (int64_t oh = 0; oh < s.oh; ++oh) {
        const int64_t h = oh * s.stride[0] - s.padding[0] + p * s.dilation[0];
        if (h < 0 || h >= s.h) continue;
        F* dst = out + h * s.w + shift;
        const F* src = in + oh * s.ow;
        if (sw == 1) {
#pragma omp simd
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow] += src[ow];
        } else {
          for (int64_t ow = lo; ow < hi; ++ow) dst[ow * sw] += src[ow];
        }
      }
    }
  }
}

// Per image and group: col [C/g*kH*kW, OH*OW] = w_g^T [C/g*kH*kW, O/g] dy_g
// [O/g, OH*OW] (sgemm/dgemm, the forward's arithmetic transposed), then
// col2im into dx. Every pair writes its own part of dx.
template <typename T>
void conv_grad_input_run(View dy, View weight, View dx, ConvGrad s) {
  using F = blas_t<T>;
  const int64_t cg = s.c / s.groups, og = s.o / s.groups, depth = cg * s.kh * s.kw;
  const int64_t plane = s.oh * s.ow, image = cg * s.h * s.w, pairs = s.n * s.groups;
  const bool per_thread = per_thread_work(pairs, pairs * depth * plane * og);
  const int64_t slots = per_thread ? omp_get_max_threads() : 1;
  std::vector<F> g_buffer, w_buffer, col(size_t(slots * depth * plane)), acc(size_t(slots * image));
  const F* pg = to_blas(dy.ptr<T>(), dy.numel(), g_buffer);
  const F* pw = to_blas(weight.ptr<T>(), weight.numel(), w_buffer);
  F* cols = col.data();
  F* accs = acc.data();
#pragma omp parallel for num_threads(int(slots)) schedule(static) if (per_thread)
  for (int64_t pair = 0; pair < pairs; ++pair) {
    const int64_t n = pair / s.groups, g = pair % s.groups;
    const int64_t slot = per_thread ? omp_get_thread_num() : 0;
    F* pc = cols + slot * depth * plane;
    F* pa = accs + slot * image;
    parallel_gemm(true, false, depth, plane, og, F(1), pw + g * og * depth,
                  pg + (n * s.o + g * og) * plane, F(0), pc);
    col2im_add(s, cg, pc, pa);
    T* dst = dx.ptr<T>() + (n * s.c + g * cg) * s.h * s.w;
    for (int64_t i = 0; i < image; ++i) store(dst + i, pa[i]);
  }
}

// dw_g [O/g, C/g*kH*kW] = sum over the images of dy_g [O/g, OH*OW] col^T, col
// being x's im2col matrix as in the forward. The images are split into a
// fixed number of chunks (not one per thread, so the sums do not depend on
// the thread count): each chunk sums its images into its own partial dw by
// the GEMM's beta, then the partials are added in chunk order.
template <typename T>
void conv_grad_weight_run(View dy, View x, View dweight, ConvGrad s) {
  using F = blas_t<T>;
  const int64_t cg = s.c / s.groups, og = s.o / s.groups, depth = cg * s.kh * s.kw;
  const int64_t plane = s.oh * s.ow, size = dweight.numel();
  // Up to 16 chunks, as long as their partials take at most 64 MiB.
  const int64_t chunks = std::clamp<int64_t>(std::min<int64_t>(s.n, 16), 1,
                                             (int64_t(16) << 20) / std::max<int64_t>(size, 1));
  const bool per_thread = per_thread_work(chunks, s.n * s.o * depth * plane);
  const int64_t slots = per_thread ? omp_get_max_threads() : 1;
  std::vector<F> g_buffer, x_buffer, col(size_t(slots * depth * plane)),
      partial(size_t(chunks * size));
  const F* pg = to_blas(dy.ptr<T>(), dy.numel(), g_buffer);
  const F* px = to_blas(x.ptr<T>(), x.numel(), x_buffer);
  F* cols = col.data();
  F* partials = partial.data();
#pragma omp parallel for num_threads(int(slots)) schedule(static) if (per_thread)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    F* pc = cols + (per_thread ? omp_get_thread_num() : 0) * depth * plane;
    F* part = partials + chunk * size;
    const int64_t first = chunk * s.n / chunks, last = (chunk + 1) * s.n / chunks;
    for (int64_t n = first; n < last; ++n) {
      for (int64_t g = 0; g < s.groups; ++g) {
        const F* xg = px + (n * s.c + g * cg) * s.h * s.w;
        im2col_grad(s, cg, xg, pc);
        parallel_gemm(false, true, og, depth, plane, F(1), pg + (n * s.o + g * og) * plane, pc,
                      n == first ? F(0) : F(1), part + g * og * depth);
      }
    }
  }
  T* out = dweight.ptr<T>();
  // Shared out only when large: a parallel region costs a wake-up of every
  // thread, which on a loaded machine can cost more than these few adds.
#pragma omp parallel for if (size > kParallelWork) schedule(static)
  for (int64_t i = 0; i < size; ++i) {
    F sum = partials[i];
    for (int64_t chunk = 1; chunk < chunks; ++chunk) sum += partials[chunk * size + i];
    store(out + i, sum);
  }
}

void conv_grad_input_kernel(KernelContext& context) {
  View dy = context.inputs[0], weight = context.inputs[1], dx = context.outputs[0];
  ConvGrad s = conv_grad_of(dx, weight, dy, context.attrs);
  if (dx.numel() == 0) return;
  require_blas_sizes("conv2d_grad_input",
                     {s.c / s.groups * s.kh * s.kw, s.oh * s.ow, s.o / s.groups});
  with_float(dx.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { conv_grad_input_run<T>(dy, weight, dx, s); });
  });
}

void conv_grad_weight_kernel(KernelContext& context) {
  View dy = context.inputs[0], x = context.inputs[1], dweight = context.outputs[0];
  ConvGrad s = conv_grad_of(x, dweight, dy, context.attrs);
  if (dweight.numel() == 0) return;
  require_blas_sizes("conv2d_grad_weight",
                     {s.c / s.groups * s.kh * s.kw, s.oh * s.ow, s.o / s.groups});
  with_float(x.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { conv_grad_weight_run<T>(dy, x, dweight, s); });
  });
}

struct AttentionGrad {
  int64_t batch, lq, lk, d, dv, shift;
  double scale;
  bool causal;
};

// Per batch item (in parallel): each query's softmax over its visible keys,
// then dv += p dy, ds = p (dy.v - dy.y), dq = scale ds k, dk += scale ds q, in
// double.
template <typename T>
void attention_grad_run(View dy, View q, View k, View v, View dq, View dk, View dv,
                        AttentionGrad s) {
#pragma omp parallel for if (s.batch * s.lq * s.lk * (s.d + s.dv) > kParallelWork)
  for (int64_t b = 0; b < s.batch; ++b) {
    const T* pg = dy.ptr<T>() + b * s.lq * s.dv;
    const T* pq = q.ptr<T>() + b * s.lq * s.d;
    const T* pk = k.ptr<T>() + b * s.lk * s.d;
    const T* pv = v.ptr<T>() + b * s.lk * s.dv;
    std::vector<double> gq(size_t(s.lq * s.d), 0.0), gk(size_t(s.lk * s.d), 0.0),
        gv(size_t(s.lk * s.dv), 0.0), p(size_t(s.lk)), dp(size_t(s.lk));
    for (int64_t i = 0; i < s.lq; ++i) {
      const int64_t visible = s.causal ? std::clamp<int64_t>(i + s.shift + 1, 0, s.lk) : s.lk;
      double m = -std::numeric_limits<double>::infinity(), sum = 0, delta = 0;
      for (int64_t j = 0; j < visible; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < s.d; ++e)
          dot += double(load(pq + i * s.d + e)) * load(pk + j * s.d + e);
        p[size_t(j)] = dot * s.scale;
        if (std::isnan(p[size_t(j)]) || p[size_t(j)] > m) m = std::isnan(m) ? m : p[size_t(j)];
      }
      for (int64_t j = 0; j < visible; ++j) sum += (p[size_t(j)] = std::exp(p[size_t(j)] - m));
      for (int64_t j = 0; j < visible; ++j) {
        p[size_t(j)] /= sum;
        double dot = 0;
        for (int64_t e = 0; e < s.dv; ++e) {
          dot += double(load(pg + i * s.dv + e)) * load(pv + j * s.dv + e);
        }
        dp[size_t(j)] = dot;
        delta += p[size_t(j)] * dot;
      }
      for (int64_t j = 0; j < visible; ++j) {
        const double ds = p[size_t(j)] * (dp[size_t(j)] - delta) * s.scale;
        for (int64_t e = 0; e < s.dv; ++e)
          gv[size_t(j * s.dv + e)] += p[size_t(j)] * load(pg + i * s.dv + e);
        for (int64_t e = 0; e < s.d; ++e) {
          gq[size_t(i * s.d + e)] += ds * load(pk + j * s.d + e);
          gk[size_t(j * s.d + e)] += ds * load(pq + i * s.d + e);
        }
      }
    }
    for (size_t i = 0; i < gq.size(); ++i) store(dq.ptr<T>() + b * s.lq * s.d + int64_t(i), gq[i]);
    for (size_t i = 0; i < gk.size(); ++i) store(dk.ptr<T>() + b * s.lk * s.d + int64_t(i), gk[i]);
    for (size_t i = 0; i < gv.size(); ++i) store(dv.ptr<T>() + b * s.lk * s.dv + int64_t(i), gv[i]);
  }
}

void attention_grad_kernel(KernelContext& context) {
  View dy = context.inputs[0], q = context.inputs[1], k = context.inputs[2], v = context.inputs[3];
  View dq = context.outputs[0], dk = context.outputs[1], dv = context.outputs[2];
  const int r = q.ndim;
  AttentionGrad s{1,
                  q.shape[r - 2],
                  k.shape[r - 2],
                  q.shape[r - 1],
                  v.shape[r - 1],
                  0,
                  context.attrs.get_float("scale"),
                  context.attrs.get_bool("causal")};
  for (int i = 0; i < r - 2; ++i) s.batch *= q.shape[i];
  if (context.attrs.get_string("causal_alignment") != "top_left") s.shift = s.lk - s.lq;
  if (s.scale == 0) s.scale = s.d > 0 ? 1 / std::sqrt(double(s.d)) : 1.0;
  if (dq.numel() == 0 && dk.numel() == 0 && dv.numel() == 0) return;
  with_float(q.dtype, [&](auto tag) {
    using T = decltype(tag);
    launch(context.call, [=] { attention_grad_run<T>(dy, q, k, v, dq, dk, dv, s); });
  });
}

}  // namespace

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  register_op(registrar, "layer_norm_grad", &norm_grad_kernel, same_signatures(ops::kFloats, 3, 3),
              0, table);
  register_op(registrar, "rms_norm_grad", &norm_grad_kernel, same_signatures(ops::kFloats, 3, 2), 0,
              table);
  register_op(registrar, "max_pool2d_grad", &pool_grad_kernel, same_signatures(ops::kFloats, 2, 1),
              0, table);
  register_op(registrar, "avg_pool2d_grad", &pool_grad_kernel, same_signatures(ops::kFloats, 2, 1),
              0, table);
  register_op(registrar, "conv2d_grad_input", &conv_grad_input_kernel,
              same_signatures(ops::kFloats, 2, 1), 0, table);
  register_op(registrar, "conv2d_grad_weight", &conv_grad_weight_kernel,
              same_signatures(ops::kFloats, 2, 1), 0, table);
  register_op(registrar, "scaled_dot_product_attention_grad", &attention_grad_kernel,
              same_signatures(ops::kFloats, 4, 3), 0, table);
}

}  // namespace oar::cpu
