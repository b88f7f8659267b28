// Reductions: sum, mean, max, min and prod over any set of axes, argmax and
// argmin along one. Floats accumulate in double, integers in their own width
// (sum and prod wrap); max and min let NaN win, argmax and argmin take NaN as
// the extreme with the first one winning (NumPy's rules). matmul_w8 (int8
// weights) is a sum over K per output.
#include <limits>
#include <string>
#include <vector>

#include "kernels/kernel.h"
#include "kernels/loops.h"
#include "kernels/simd.h"

namespace oar::cpu {
namespace {

enum class Reduce { kSum, kMean, kMax, kMin, kProd };

template <typename T>
constexpr bool kIsFloat = std::is_floating_point_v<compute_t<T>>;

// What the reduction accumulates in: double for floats; for integers the
// unsigned type (sum and prod wrap) or the type itself (max and min compare).
template <Reduce r, typename T>
auto accumulator() {
  if constexpr (kIsFloat<T>)
    return double{};
  else if constexpr (r == Reduce::kMax || r == Reduce::kMin)
    return T{};
  else
    return std::make_unsigned_t<T>{};
}
template <Reduce r, typename T>
using Acc = decltype(accumulator<r, T>());

template <Reduce r, typename A>
A combine(A acc, A x) {
  if constexpr (r == Reduce::kSum || r == Reduce::kMean) return acc + x;
  if constexpr (r == Reduce::kProd) return acc * x;
  if constexpr (r == Reduce::kMax) return x > acc || x != x ? x : acc;  // NaN wins
  if constexpr (r == Reduce::kMin) return x < acc || x != x ? x : acc;
}

template <Reduce r, typename A>
constexpr A identity() {
  using limits = std::numeric_limits<A>;
  if constexpr (r == Reduce::kProd) return A(1);
  if constexpr (r == Reduce::kMax)
    return limits::has_infinity ? -limits::infinity() : limits::lowest();
  if constexpr (r == Reduce::kMin) return limits::has_infinity ? limits::infinity() : limits::max();
  return A(0);
}

// A reduction of a contiguous x as loops over output rows: output row o
// (kept dimensions before the last reduced one) combines, for every reduced
// multi-index, |inner| contiguous elements (the trailing kept dimensions)
// into |inner| outputs. With inner == 1 the last reduced dimension is
// contiguous instead and forms |segment|-long runs.
struct Geometry {
  int64_t rows = 1, inner = 1, segment = 1, count = 1;
  int kept = 0, reduced = 0;
  int64_t kept_shape[ops::kMaxDims] = {}, kept_strides[ops::kMaxDims] = {};
  int64_t reduced_shape[ops::kMaxDims] = {}, reduced_strides[ops::kMaxDims] = {};
};

Geometry geometry(const View& x, const std::vector<int64_t>& axes) {
  bool reduce[ops::kMaxDims] = {};
  for (int d = 0; d < x.ndim; ++d) reduce[d] = axes.empty();
  for (int64_t axis : axes) {
    if (x.ndim > 0) reduce[axis < 0 ? axis + x.ndim : axis] = true;  // the schema checked range
  }
  Geometry g;
  for (int d = 0; d < x.ndim; ++d) g.count *= reduce[d] ? x.shape[d] : 1;
  // Merge neighbours of one kind, dropping extent-1 dimensions.
  int kinds = 0;
  bool kind[ops::kMaxDims] = {};
  int64_t shape[ops::kMaxDims] = {}, stride[ops::kMaxDims] = {};
  for (int d = 0; d < x.ndim; ++d) {
    if (x.shape[d] == 1) continue;
    if (kinds == 0 || kind[kinds - 1] != reduce[d]) {
      kind[kinds] = reduce[d];
      shape[kinds++] = 1;
    }
    shape[kinds - 1] *= x.shape[d];
    stride[kinds - 1] = x.strides[d];
  }
  int end = kinds;
  if (end > 0 && !kind[end - 1]) g.inner = shape[--end];
  if (g.inner == 1 && end > 0) g.segment = shape[--end];
  for (int d = 0; d < end; ++d) {
    if (kind[d]) {
      g.reduced_shape[g.reduced] = shape[d];
      g.reduced_strides[g.reduced++] = stride[d];
    } else {
      g.rows *= shape[d];
      g.kept_shape[g.kept] = shape[d];
      g.kept_strides[g.kept++] = stride[d];
    }
  }
  return g;
}

// Calls f(offset) for every multi-index of |shape| (row-major), |ndim| dims.
template <typename F>
void for_each_offset(int ndim, const int64_t* shape, const int64_t* strides, F&& f) {
  int64_t index[ops::kMaxDims] = {};
  for (int d = 0; d < ndim; ++d) {
    if (shape[d] == 0) return;
  }
  for (int64_t offset = 0;;) {
    f(offset);
    int d = ndim - 1;
    for (; d >= 0 && ++index[d] == shape[d]; --d) {
      index[d] = 0;
      offset -= (shape[d] - 1) * strides[d];
    }
    if (d < 0) return;
    offset += strides[d];
  }
}

// The sum of n contiguous f32 in double on the widest SIMD: element j adds
// to lane j % kSumLanes and the lanes are added in a fixed tree at the end,
// so the result depends neither on the vector width nor on the threads.
// Four AVX-512 registers of independent adds (eight double lanes waited on
// each add's latency and ran 2 lanes a vector on the baseline build).
constexpr int64_t kSumLanes = 32;

OAR_CPU_WIDEST_SIMD double sum_f32(const float* x, int64_t n) {
  double lane[kSumLanes] = {};
  int64_t j = 0;
  for (; j + kSumLanes <= n; j += kSumLanes) {
    for (int64_t l = 0; l < kSumLanes; ++l) lane[l] += double(x[j + l]);
  }
  for (; j < n; ++j) lane[j % kSumLanes] += double(x[j]);
  for (int64_t half = kSumLanes / 2; half > 0; half /= 2) {
    for (int64_t l = 0; l < half; ++l) lane[l] += lane[l + half];
  }
  return lane[0];
}

// Combines n contiguous elements into acc, eight lanes at a time (f32 sums:
// sum_f32).
template <Reduce r, typename A, typename T>
A reduce_run(A acc, const T* x, int64_t n) {
  if constexpr ((r == Reduce::kSum || r == Reduce::kMean) && std::is_same_v<T, float>) {
    return acc + sum_f32(x, n);
  }
  constexpr int kLanes = 8;
  A lanes[kLanes];
  for (A& lane : lanes) lane = identity<r, A>();
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) lanes[l] = combine<r>(lanes[l], A(load(x + i + l)));
  }
  for (; i < n; ++i) acc = combine<r>(acc, A(load(x + i)));
  for (A lane : lanes) acc = combine<r>(acc, lane);
  return acc;
}

template <Reduce r, typename T>
void run_reduce(const Geometry& g, const T* x, T* y) {
  using A = Acc<r, T>;
  auto finish = [&](A acc) {
    if constexpr (r == Reduce::kMean) return acc / A(g.count);  // 0 / 0: NaN for no elements
    return acc;
  };
  if (g.rows == 1 && g.inner == 1 && g.reduced == 0 && g.segment > 4 * kGrain) {
    // One contiguous reduction: fixed chunks, so the result does not depend
    // on the number of threads.
    const int64_t chunk = 4 * kGrain, chunks = (g.segment + chunk - 1) / chunk;
    std::vector<A> partial(static_cast<size_t>(chunks));
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      partial[size_t(c)] =
          reduce_run<r>(identity<r, A>(), x + c * chunk, std::min(chunk, g.segment - c * chunk));
    }
    A acc = identity<r, A>();
    for (A p : partial) acc = combine<r>(acc, p);
    store(y, finish(acc));
    return;
  }
  // Tasks are (output row, block of at most kBlock inner outputs), so that a
  // reduction over leading axes parallelises too.
  constexpr int64_t kBlock = 1024;
  if (g.rows == 0 || g.inner == 0) return;  // no outputs
  const int64_t block = std::min(g.inner, kBlock), blocks = (g.inner + block - 1) / block;
  const int64_t tasks = g.rows * blocks, work = g.rows * g.inner * g.count;
  // Handed out dynamically, at least 4 * kGrain elements a time: a thread
  // that waits for a core leaves its share to the other.
  const int64_t per_task = std::max<int64_t>(block * g.count, 1);
  const int64_t chunk = std::max<int64_t>(4 * kGrain / per_task, 1);
#pragma omp parallel if (work > 2 * kGrain)
  {
    std::vector<A> acc(static_cast<size_t>(block));
#pragma omp for schedule(dynamic, chunk)
    for (int64_t task = 0; task < tasks; ++task) {
      const int64_t row = task / blocks, first = task % blocks * block;
      const int64_t width = std::min(block, g.inner - first);
      int64_t base = first;
      for (int64_t d = g.kept - 1, rest = row; d >= 0; --d) {
        base += rest % g.kept_shape[d] * g.kept_strides[d];
        rest /= g.kept_shape[d];
      }
      const T* xs = x + base;
      A* a = acc.data();
      std::fill(a, a + width, identity<r, A>());
      const int64_t segment = g.segment;
      for_each_offset(g.reduced, g.reduced_shape, g.reduced_strides, [&](int64_t offset) {
        if (g.inner == 1) {
          a[0] = reduce_run<r>(a[0], xs + offset, segment);
          return;
        }
        for (int64_t j = 0; j < width; ++j) a[j] = combine<r>(a[j], A(load(xs + offset + j)));
      });
      for (int64_t j = 0; j < width; ++j) store(y + row * g.inner + first + j, finish(a[j]));
    }
  }
}

template <Reduce r>
void reduce_kernel(KernelContext& context) {
  const View x = context.inputs[0], y = context.outputs[0];
  const Geometry g = geometry(x, context.attrs.get_ints("axes"));
  oar::sdk::require(g.count > 0 || (r != Reduce::kMax && r != Reduce::kMin),
                    OAR_STATUS_INVALID_ARGUMENT,
                    "over an empty axis there is no value to return (no identity)");
  with_dtype(x.dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool> && (kIsFloat<T> || r != Reduce::kMean)) {
      launch(context.call, [g, x, y] { run_reduce<r>(g, x.ptr<const T>(), y.ptr<T>()); });
    }
  });
}

// The index of the first maximum (or minimum) along one axis; NaN is the
// extreme and the first NaN wins.
template <bool is_max>
void arg_kernel(KernelContext& context) {
  const View x = context.inputs[0], y = context.outputs[0];
  int64_t axis = context.attrs.get_int("axis");
  axis = axis < 0 ? axis + x.ndim : axis;
  int64_t outer = 1, dim = 1, inner = 1;
  for (int d = 0; d < x.ndim; ++d) (d < axis ? outer : d == axis ? dim : inner) *= x.shape[d];
  oar::sdk::require(dim > 0, OAR_STATUS_INVALID_ARGUMENT,
                    "over an empty axis there is no value to return (no identity)");
  with_dtype(x.dtype, [&](auto t) {
    using T = decltype(t);
    if constexpr (!std::is_same_v<T, bool>) {
      launch(context.call, [=] {
        const T* xs = x.ptr<const T>();
        int64_t* ys = y.ptr<int64_t>();
        const int64_t outputs = outer * inner;
#pragma omp parallel for if (outputs * dim > 2 * kGrain) schedule(static)
        for (int64_t o = 0; o < outputs; ++o) {
          const T* p = xs + (o / inner) * dim * inner + o % inner;
          auto best = load(p);
          int64_t index = 0;
          for (int64_t i = 1; i < dim && best == best; ++i) {
            const auto v = load(p + i * inner);
            if ((is_max ? v > best : v < best) || v != v) {
              best = v;
              index = i;
            }
          }
          ys[o] = index;
        }
      });
    }
  });
}

// matmul_w8: a reduction over K per output, y[r, n] = scale[n] * sum_k x[r,
// k] * weight[n, k], accumulated in double and rounded once.
void matmul_w8_kernel(KernelContext& context) {
  const View x = context.inputs[0], w = context.inputs[1], scale = context.inputs[2],
             y = context.outputs[0];
  const int64_t K = x.ndim == 0 ? 1 : x.shape[x.ndim - 1], N = w.shape[0];
  const int64_t rows = N == 0 ? 0 : y.numel() / N;
  with_float(x.dtype, [&](auto t) {
    using T = decltype(t);
    using Acc = double;
    launch(context.call, [=] {
      const T* xs = x.ptr<const T>();
      const int8_t* ws = w.ptr<const int8_t>();
      const T* ss = scale.ptr<const T>();
      T* ys = y.ptr<T>();
#pragma omp parallel for if (rows * N * K > 2 * kGrain) schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t n = 0; n < N; ++n) {
          Acc acc = 0;
          for (int64_t k = 0; k < K; ++k) acc += Acc(load(xs + r * K + k)) * Acc(ws[n * K + k]);
          store(ys + r * N + n, acc * Acc(load(ss + n)));
        }
      }
    });
  });
}

}  // namespace

void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar,
                                AllocationTable* table) {
  const std::pair<const char*, KernelBody> reductions[] = {
      {"sum", reduce_kernel<Reduce::kSum>},   {"mean", reduce_kernel<Reduce::kMean>},
      {"max", reduce_kernel<Reduce::kMax>},   {"min", reduce_kernel<Reduce::kMin>},
      {"prod", reduce_kernel<Reduce::kProd>},
  };
  for (const auto& [op, body] : reductions) {
    register_op(registrar, op, body, same_signatures(ops::find_schema(op)->dtypes, 1, 1), 0, table);
  }
  std::vector<std::vector<DLDataType>> arg;
  for (DLDataType t : ops::dtypes_in(ops::kNumbers)) arg.push_back({t, dtype::i64});
  register_op(registrar, "argmax", arg_kernel<true>, arg, 0, table);
  register_op(registrar, "argmin", arg_kernel<false>, arg, 0, table);
  std::vector<std::vector<DLDataType>> w8;
  for (DLDataType t : ops::dtypes_in(ops::find_schema("matmul_w8")->dtypes)) {
    w8.push_back({t, dtype::i8, t, t});
  }
  register_op(registrar, "matmul_w8", matmul_w8_kernel, w8, 0, table);
}

}  // namespace oar::cpu
