// The cuda plugin's device kernels: CUDA C++ that hipcc also compiles (the hip
// plugin's later stage builds this same file). Everything vendor-specific is
// in portable.h. Every kernel has C linkage (extern "C") so that its name in
// the image is the name the plugin looks up with cuModuleGetFunction; the
// names are oar_<op>_<dtype> (f32, f16, bf16, i32, i64), oar_cast_<from>_<to>,
// and oar_<move>_b<bits> for the kernels that move bits whatever the dtype
// (fill, copy, where).
//
// Launch geometry (kernels_host.cc): 1-D grids whose kernels loop with a
// grid stride over 64-bit indices, so any grid covers any element count and
// the host caps the grid; blocks of kBlock (256) threads, which the
// block-per-row kernels (reductions, softmax, layer_norm) rely on.
//
// Numerics (docs/ops.md): f16/bf16 are computed in f32 and rounded once when
// stored (for add/sub/mul/div/sqrt f32 has more than twice their precision
// plus two bits, so the result is the correctly rounded one); reductions and
// the norms accumulate in f64; softmax in blocked f32 partial sums.
//
// The kernel list is kernels.list: the plugin embeds it, the cuobjdump check
// (check_image.cmake) and the fake driver's tests read it.
#include "portable.h"

#define OAR_BLOCK 256  // threads per block of every launch (kBlock on the host)
#define OAR_MAX_DIMS 8

// The shape of an elementwise launch: the output's shape and, per operand
// (0: the output, then the inputs), its strides in elements (0 where it is
// broadcast). Mirrors Geo in kernels_host.cc: all 64-bit, one layout on both
// sides.
struct Geo {
  int64_t rank;
  int64_t numel;
  int64_t shape[OAR_MAX_DIMS];
  int64_t strides[4][OAR_MAX_DIMS];
};

// A reduction: every output element (the kept dimensions, row-major) reduces
// the elements of the reduced dimensions. Strides are the input's, in
// elements. Mirrors ReduceGeo in kernels_host.cc.
struct ReduceGeo {
  int64_t outputs;  // number of output elements
  int64_t count;    // elements reduced into each
  int64_t kept_rank;
  int64_t kept_shape[OAR_MAX_DIMS];
  int64_t kept_strides[OAR_MAX_DIMS];
  int64_t reduced_rank;
  int64_t reduced_shape[OAR_MAX_DIMS];
  int64_t reduced_strides[OAR_MAX_DIMS];
};

namespace {

// Element <-> float (the arithmetic type of every floating kernel).
__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(oar_f16_t x) { return OAR_F16_TO_FLOAT(x); }
__device__ inline float to_float(oar_bf16_t x) { return OAR_BF16_TO_FLOAT(x); }

template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) {
  return x;
}
template <>
__device__ inline oar_f16_t from_float<oar_f16_t>(float x) {
  return OAR_FLOAT_TO_F16(x);
}
template <>
__device__ inline oar_bf16_t from_float<oar_bf16_t>(float x) {
  return OAR_FLOAT_TO_BF16(x);
}

// A value for comparisons: floats as float (exact for f16/bf16), integers as
// themselves (i64 is never rounded through a float).
__device__ inline float cmp_value(float x) { return x; }
__device__ inline float cmp_value(oar_f16_t x) { return OAR_F16_TO_FLOAT(x); }
__device__ inline float cmp_value(oar_bf16_t x) { return OAR_BF16_TO_FLOAT(x); }
__device__ inline int32_t cmp_value(int32_t x) { return x; }
__device__ inline int64_t cmp_value(int64_t x) { return x; }

// A grid-stride loop over 64-bit indices: any grid covers any n.
#define OAR_FOR_EACH(i, n)                                                    \
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += uint64_t(blockDim.x) * gridDim.x)
// The same with blocks as the unit (one row per block).
#define OAR_FOR_EACH_BLOCK(r, n) for (uint64_t r = blockIdx.x; r < uint64_t(n); r += gridDim.x)

// Element offsets of the |linear|-th output element for |count| operands.
__device__ inline void geo_offsets(const Geo& g, int64_t linear, int count, int64_t* out) {
  for (int k = 0; k < count; ++k) out[k] = 0;
  for (int d = int(g.rank) - 1; d >= 0; --d) {
    const int64_t extent = g.shape[d];
    const int64_t index = linear % extent;
    linear /= extent;
    for (int k = 0; k < count; ++k) out[k] += index * g.strides[k][d];
  }
}

__device__ inline bool is_nan(float x) { return x != x; }
__device__ inline bool is_nan(double x) { return x != x; }

enum BinaryOp { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum, kPow };
enum CompareOp { kEq, kNe, kLt, kLe, kGt, kGe };
enum UnaryOp {
  kNeg,
  kAbs,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTanh,
  kSigmoid,
  kRelu,
  kSilu,
  kErf,
  kFloor,
  kCeil,
  kReciprocal,
  kGelu,
  kGeluTanh
};
enum ReduceOp { kSum, kMean, kMax, kMin, kProd };

template <int Op>
__device__ inline float binary(float a, float b) {
  switch (Op) {
    case kAdd:
      return a + b;
    case kSub:
      return a - b;
    case kMul:
      return a * b;
    case kDiv:
      return a / b;
    case kPow:
      return powf(a, b);
    // NaN propagates as in docs/ops.md (maximum/minimum of a NaN is NaN).
    case kMaximum:
      return (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b);
    default:
      return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? a : b);
  }
}

template <int Op, typename V>
__device__ inline bool compare(V a, V b) {
  switch (Op) {
    case kEq:
      return a == b;
    case kNe:
      return a != b;
    case kLt:
      return a < b;
    case kLe:
      return a <= b;
    case kGt:
      return a > b;
    default:
      return a >= b;
  }
}

template <int Op>
__device__ inline float unary(float x) {
  switch (Op) {
    case kNeg:
      return -x;
    case kAbs:
      return fabsf(x);
    case kExp:
      return expf(x);
    case kLog:
      return logf(x);
    case kSqrt:
      return sqrtf(x);
    case kRsqrt:
      return 1.0f / sqrtf(x);
    case kSin:
      return sinf(x);
    case kCos:
      return cosf(x);
    case kTanh:
      return tanhf(x);
    case kSigmoid:
      return 1.0f / (1.0f + expf(-x));
    case kRelu:
      return x > 0.0f ? x : (is_nan(x) ? x : 0.0f);
    case kSilu:
      return x * (1.0f / (1.0f + expf(-x)));
    case kErf:
      return erff(x);
    case kFloor:
      return floorf(x);
    case kCeil:
      return ceilf(x);
    case kReciprocal:
      return 1.0f / x;
    case kGelu:
      return 0.5f * x * (1.0f + erff(x * 0.70710678118654752440f));
    default:
      // 0.5 x (1 + tanh(u)) as x / (1 + e^-2u): exactly 0 (and NaN at -inf)
      // where tanh(u) is -1.
      return x / (1.0f + expf(-1.59576912160573071176f * (x + 0.044715f * x * x * x)));
  }
}

template <typename T, int Op>
__device__ inline void unary_kernel(const T* x, T* y, uint64_t n) {
  OAR_FOR_EACH(i, n) { y[i] = from_float<T>(unary<Op>(to_float(x[i]))); }
}

template <typename T, int Op>
__device__ inline void binary_kernel(const T* a, const T* b, T* y, const Geo& g) {
  OAR_FOR_EACH(i, uint64_t(g.numel)) {
    int64_t o[3];
    geo_offsets(g, int64_t(i), 3, o);
    y[o[0]] = from_float<T>(binary<Op>(to_float(a[o[1]]), to_float(b[o[2]])));
  }
}

template <typename T, int Op>
__device__ inline void compare_kernel(const T* a, const T* b, uint8_t* y, const Geo& g) {
  OAR_FOR_EACH(i, uint64_t(g.numel)) {
    int64_t o[3];
    geo_offsets(g, int64_t(i), 3, o);
    y[o[0]] = compare<Op>(cmp_value(a[o[1]]), cmp_value(b[o[2]])) ? 1 : 0;
  }
}

template <typename From, typename To>
__device__ inline void cast_kernel(const From* x, To* y, uint64_t n) {
  OAR_FOR_EACH(i, n) { y[i] = from_float<To>(to_float(x[i])); }
}

// Moves of any dtype by its width: W is an unsigned integer of that width.
template <typename W>
__device__ inline void fill_kernel(W* y, W value, uint64_t n) {
  OAR_FOR_EACH(i, n) { y[i] = value; }
}

// y (operand 0) = x (operand 1) through their strides: copy from any strides,
// and transpose (x's strides permuted).
template <typename W>
__device__ inline void copy_kernel(const W* x, W* y, const Geo& g) {
  OAR_FOR_EACH(i, uint64_t(g.numel)) {
    int64_t o[2];
    geo_offsets(g, int64_t(i), 2, o);
    y[o[0]] = x[o[1]];
  }
}

// y = condition ? a : b, operands (y, condition, a, b); a nonzero byte is true.
template <typename W>
__device__ inline void where_kernel(const uint8_t* c, const W* a, const W* b, W* y, const Geo& g) {
  OAR_FOR_EACH(i, uint64_t(g.numel)) {
    int64_t o[4];
    geo_offsets(g, int64_t(i), 4, o);
    y[o[0]] = c[o[1]] != 0 ? a[o[2]] : b[o[3]];
  }
}

template <int Op>
__device__ inline double reduce_identity() {
  switch (Op) {
    case kMax:
      return -double(INFINITY);
    case kMin:
      return double(INFINITY);
    case kProd:
      return 1.0;
    default:
      return 0.0;
  }
}

template <int Op>
__device__ inline double reduce_combine(double a, double b) {
  switch (Op) {
    case kMax:
      return (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b);
    case kMin:
      return (is_nan(a) || is_nan(b)) ? a + b : (a < b ? a : b);
    case kProd:
      return a * b;
    default:
      return a + b;
  }
}

// Combines every thread's |value| of the block; all threads get the result.
template <int Op>
__device__ inline double block_reduce(double value, double* shared) {
  __syncthreads();  // the previous use of |shared| is over
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned s = OAR_BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      shared[threadIdx.x] = reduce_combine<Op>(shared[threadIdx.x], shared[threadIdx.x + s]);
    }
    __syncthreads();
  }
  return shared[0];
}

// One block per output element: its threads stride over the reduced
// elements, accumulating in f64, then combine through shared memory.
template <typename T, int Op>
__device__ inline void reduce_kernel(const T* x, T* y, const ReduceGeo& g) {
  __shared__ double partial[OAR_BLOCK];
  OAR_FOR_EACH_BLOCK(out, g.outputs) {
    int64_t base = 0, rest = int64_t(out);
    for (int d = int(g.kept_rank) - 1; d >= 0; --d) {
      base += (rest % g.kept_shape[d]) * g.kept_strides[d];
      rest /= g.kept_shape[d];
    }
    double acc = reduce_identity<Op>();
    for (int64_t r = threadIdx.x; r < g.count; r += OAR_BLOCK) {
      int64_t offset = base, left = r;
      for (int d = int(g.reduced_rank) - 1; d >= 0; --d) {
        offset += (left % g.reduced_shape[d]) * g.reduced_strides[d];
        left /= g.reduced_shape[d];
      }
      acc = reduce_combine<Op>(acc, double(to_float(x[offset])));
    }
    acc = block_reduce<Op>(acc, partial);
    if (Op == kMean) acc = acc / double(g.count);  // 0 / 0 = NaN for an empty axis
    if (threadIdx.x == 0) y[out] = from_float<T>(float(acc));
  }
}

__device__ inline float block_max_float(float value, float* shared) {
  __syncthreads();
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned s = OAR_BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      const float a = shared[threadIdx.x], b = shared[threadIdx.x + s];
      shared[threadIdx.x] = (is_nan(a) || is_nan(b)) ? a + b : (a > b ? a : b);
    }
    __syncthreads();
  }
  return shared[0];
}

__device__ inline float block_sum_float(float value, float* shared) {
  __syncthreads();
  shared[threadIdx.x] = value;
  __syncthreads();
  for (unsigned s = OAR_BLOCK / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  return shared[0];
}

// softmax / log_softmax along an axis of |axis| elements: the input is
// [outer, axis, inner] (contiguous); one block per row of the axis.
template <typename T, bool Log>
__device__ inline void softmax_kernel(const T* x, T* y, int64_t outer, int64_t axis,
                                      int64_t inner) {
  __shared__ float partial[OAR_BLOCK];
  OAR_FOR_EACH_BLOCK(row, outer * inner) {
    const int64_t base = (int64_t(row) / inner) * axis * inner + int64_t(row) % inner;
    float m = -INFINITY;
    for (int64_t j = threadIdx.x; j < axis; j += OAR_BLOCK) {
      const float v = to_float(x[base + j * inner]);
      m = (is_nan(m) || is_nan(v)) ? m + v : (v > m ? v : m);
    }
    m = block_max_float(m, partial);
    // A NaN or +inf in the row, or a row of -inf only: NaN everywhere.
    const bool undefined = is_nan(m) || m == INFINITY || m == -INFINITY;
    float sum = 0.0f;
    for (int64_t j = threadIdx.x; j < axis; j += OAR_BLOCK) {
      sum += expf(to_float(x[base + j * inner]) - m);
    }
    sum = block_sum_float(sum, partial);
    const float log_sum = logf(sum);
    for (int64_t j = threadIdx.x; j < axis; j += OAR_BLOCK) {
      const float shifted = to_float(x[base + j * inner]) - m;
      float v = Log ? shifted - log_sum : expf(shifted) / sum;
      if (undefined) v = nanf("");
      y[base + j * inner] = from_float<T>(v);
    }
  }
}

// layer_norm over the last dimension (d elements) of |rows| rows; two passes
// (the mean, then the variance of the centred values), accumulated in f64.
template <typename T>
__device__ inline void layer_norm_kernel(const T* x, const T* weight, const T* bias, T* y,
                                         int64_t rows, int64_t d, float eps) {
  __shared__ double partial[OAR_BLOCK];
  OAR_FOR_EACH_BLOCK(row, rows) {
    const T* in = x + int64_t(row) * d;
    T* out = y + int64_t(row) * d;
    double sum = 0.0;
    for (int64_t j = threadIdx.x; j < d; j += OAR_BLOCK) sum += to_float(in[j]);
    const double mean = block_reduce<kSum>(sum, partial) / double(d);
    double squares = 0.0;
    for (int64_t j = threadIdx.x; j < d; j += OAR_BLOCK) {
      const double c = double(to_float(in[j])) - mean;
      squares += c * c;
    }
    const double var = block_reduce<kSum>(squares, partial) / double(d);
    const double rstd = 1.0 / sqrt(var + double(eps));
    for (int64_t j = threadIdx.x; j < d; j += OAR_BLOCK) {
      const double v = (double(to_float(in[j])) - mean) * rstd * double(to_float(weight[j])) +
                       double(to_float(bias[j]));
      out[j] = from_float<T>(float(v));
    }
  }
}

// matmul: y[batch] (m x n, contiguous) = a[batch] (m x k) * b[batch] (k x n),
// a's element (i, l) at a_sm * i + a_sk * l and b's (l, j) at b_sk * l +
// b_sn * j (the transposes are strides); the batch Geo gives each operand's
// batch offset (0: y, 1: a, 2: b). One 16 x 16 tile of y per block (256
// threads), K in steps of 16 through shared memory; the sum accumulates in
// Acc (f64 for f32 data, f32 for f16/bf16). Zero padding past m, n, k only
// ever meets zero padding, so an inf in a never becomes 0 * inf = NaN.
template <typename T, typename Acc>
__device__ inline void matmul_kernel(const T* a, const T* b, T* y, const Geo& g, int64_t m,
                                     int64_t n, int64_t k, int64_t a_sm, int64_t a_sk, int64_t b_sk,
                                     int64_t b_sn) {
  __shared__ float as[16][17];
  __shared__ float bs[16][17];
  const int tx = int(threadIdx.x % 16), ty = int(threadIdx.x / 16);
  const int64_t tiles_m = (m + 15) / 16, tiles_n = (n + 15) / 16;
  const int64_t per_batch = tiles_m * tiles_n;
  OAR_FOR_EACH_BLOCK(tile, g.numel * per_batch) {
    const int64_t batch = int64_t(tile) / per_batch, rest = int64_t(tile) % per_batch;
    const int64_t row = (rest / tiles_n) * 16 + ty, col = (rest % tiles_n) * 16 + tx;
    int64_t o[3];
    geo_offsets(g, batch, 3, o);
    Acc acc = Acc(0);
    for (int64_t k0 = 0; k0 < k; k0 += 16) {
      as[ty][tx] =
          (row < m && k0 + tx < k) ? to_float(a[o[1] + row * a_sm + (k0 + tx) * a_sk]) : 0.0f;
      bs[ty][tx] =
          (k0 + ty < k && col < n) ? to_float(b[o[2] + (k0 + ty) * b_sk + col * b_sn]) : 0.0f;
      __syncthreads();
      for (int kk = 0; kk < 16; ++kk) acc += Acc(as[ty][kk]) * Acc(bs[kk][tx]);
      __syncthreads();
    }
    if (row < m && col < n) y[o[0] + row * n + col] = from_float<T>(float(acc));
  }
}

// An index out of range: the first kernel thread to find one records it in
// the stream's error word (kernels_host: ErrorWord), which the plugin reads
// when the stream is synchronized and turns into OUT_OF_RANGE.
struct ErrorWord {
  unsigned int flag;  // 0, then 1 from the first report on
  int op;             // 1: index_select, 2: gather
  long long index;
  long long bound;
};

__device__ inline void report_index(ErrorWord* error, int op, long long index, long long bound) {
  if (atomicCAS(&error->flag, 0u, 1u) == 0u) {
    error->op = op;
    error->index = index;
    error->bound = bound;
  }
}

// index_select along an axis: x is [outer, extent, inner], y [outer, m, inner].
template <typename W, typename I>
__device__ inline void index_select_kernel(const W* x, const I* index, W* y, ErrorWord* error,
                                           int64_t outer, int64_t extent, int64_t inner,
                                           int64_t m) {
  OAR_FOR_EACH(i, uint64_t(outer * m * inner)) {
    const int64_t o = int64_t(i) / (m * inner), j = (int64_t(i) / inner) % m,
                  in = int64_t(i) % inner;
    const int64_t at = int64_t(index[j]);
    if (at < 0 || at >= extent) {
      report_index(error, 1, at, extent);
      continue;
    }
    y[i] = x[(o * extent + at) * inner + in];
  }
}

// gather: y and index share a shape (g.shape, rank g.rank); x's element at
// the index's position with the axis coordinate replaced by the index value;
// g.strides[0] are x's strides.
template <typename W, typename I>
__device__ inline void gather_kernel(const W* x, const I* index, W* y, ErrorWord* error, Geo g,
                                     int64_t axis, int64_t extent) {
  OAR_FOR_EACH(i, uint64_t(g.numel)) {
    const int64_t at = int64_t(index[i]);
    if (at < 0 || at >= extent) {
      report_index(error, 2, at, extent);
      continue;
    }
    int64_t offset = 0, rest = int64_t(i);
    for (int d = int(g.rank) - 1; d >= 0; --d) {
      const int64_t p = rest % g.shape[d];
      rest /= g.shape[d];
      offset += (d == axis ? at : p) * g.strides[0][d];
    }
    y[i] = x[offset];
  }
}

}  // namespace

// clang-format off
#define OAR_FLOAT_TYPES(X, ...) X(f32, float, __VA_ARGS__) X(f16, oar_f16_t, __VA_ARGS__)      \
  X(bf16, oar_bf16_t, __VA_ARGS__)

#define OAR_UNARY_ONE(tag, type, name, op)                                                    \
  extern "C" __global__ void oar_##name##_##tag(const type* x, type* y, uint64_t n) {         \
    unary_kernel<type, op>(x, y, n); }
#define OAR_UNARY(name, op) OAR_FLOAT_TYPES(OAR_UNARY_ONE, name, op)

#define OAR_BINARY_ONE(tag, type, name, op)                                                   \
  extern "C" __global__ void oar_##name##_##tag(const type* a, const type* b, type* y,        \
                                                Geo g) { binary_kernel<type, op>(a, b, y, g); }
#define OAR_BINARY(name, op) OAR_FLOAT_TYPES(OAR_BINARY_ONE, name, op)

#define OAR_COMPARE_ONE(tag, type, name, op)                                                  \
  extern "C" __global__ void oar_##name##_##tag(const type* a, const type* b, uint8_t* y,     \
                                                Geo g) { compare_kernel<type, op>(a, b, y, g); }
#define OAR_COMPARE(name, op) OAR_FLOAT_TYPES(OAR_COMPARE_ONE, name, op)                      \
  OAR_COMPARE_ONE(i32, int32_t, name, op) OAR_COMPARE_ONE(i64, int64_t, name, op)

#define OAR_REDUCE_ONE(tag, type, name, op)                                                   \
  extern "C" __global__ void oar_##name##_##tag(const type* x, type* y, ReduceGeo g) {        \
    reduce_kernel<type, op>(x, y, g); }
#define OAR_REDUCE(name, op) OAR_FLOAT_TYPES(OAR_REDUCE_ONE, name, op)

#define OAR_CAST(from_name, from_t, to_name, to_t)                                            \
  extern "C" __global__ void oar_cast_##from_name##_##to_name(const from_t* x, to_t* y,       \
                                                              uint64_t n) {                   \
    cast_kernel<from_t, to_t>(x, y, n); }

#define OAR_MOVES(bits, type)                                                                 \
  extern "C" __global__ void oar_fill_b##bits(type* y, type value, uint64_t n) {              \
    fill_kernel<type>(y, value, n); }                                                         \
  extern "C" __global__ void oar_copy_b##bits(const type* x, type* y, Geo g) {                \
    copy_kernel<type>(x, y, g); }                                                             \
  extern "C" __global__ void oar_where_b##bits(const uint8_t* c, const type* a,               \
                                               const type* b, type* y, Geo g) {               \
    where_kernel<type>(c, a, b, y, g); }

#define OAR_NN_ONE(tag, type, unused)                                                         \
  extern "C" __global__ void oar_softmax_##tag(const type* x, type* y, int64_t outer,         \
                                               int64_t axis, int64_t inner) {                 \
    softmax_kernel<type, false>(x, y, outer, axis, inner); }                                  \
  extern "C" __global__ void oar_log_softmax_##tag(const type* x, type* y, int64_t outer,     \
                                                   int64_t axis, int64_t inner) {             \
    softmax_kernel<type, true>(x, y, outer, axis, inner); }                                   \
  extern "C" __global__ void oar_layer_norm_##tag(const type* x, const type* w,               \
                                                  const type* b, type* y, int64_t rows,       \
                                                  int64_t d, float eps) {                     \
    layer_norm_kernel<type>(x, w, b, y, rows, d, eps); }

#define OAR_MATMUL(tag, type, acc)                                                            \
  extern "C" __global__ void oar_matmul_##tag(const type* a, const type* b, type* y, Geo g,   \
                                              int64_t m, int64_t n, int64_t k, int64_t a_sm,  \
                                              int64_t a_sk, int64_t b_sk, int64_t b_sn) {     \
    matmul_kernel<type, acc>(a, b, y, g, m, n, k, a_sm, a_sk, b_sk, b_sn); }
#define OAR_INDEXED(bits, type, itag, itype)                                                  \
  extern "C" __global__ void oar_index_select_b##bits##_##itag(                               \
      const type* x, const itype* index, type* y, ErrorWord* error, int64_t outer,            \
      int64_t extent, int64_t inner, int64_t m) {                                             \
    index_select_kernel<type, itype>(x, index, y, error, outer, extent, inner, m); }          \
  extern "C" __global__ void oar_gather_b##bits##_##itag(const type* x, const itype* index,   \
                                                         type* y, ErrorWord* error, Geo g,    \
                                                         int64_t axis, int64_t extent) {      \
    gather_kernel<type, itype>(x, index, y, error, g, axis, extent); }
#define OAR_INDEXED_BOTH(bits, type) OAR_INDEXED(bits, type, i32, int32_t)                    \
  OAR_INDEXED(bits, type, i64, long long)
// clang-format on

OAR_UNARY(neg, kNeg)
OAR_UNARY(abs, kAbs)
OAR_UNARY(exp, kExp)
OAR_UNARY(log, kLog)
OAR_UNARY(sqrt, kSqrt)
OAR_UNARY(rsqrt, kRsqrt)
OAR_UNARY(sin, kSin)
OAR_UNARY(cos, kCos)
OAR_UNARY(tanh, kTanh)
OAR_UNARY(sigmoid, kSigmoid)
OAR_UNARY(relu, kRelu)
OAR_UNARY(silu, kSilu)
OAR_UNARY(erf, kErf)
OAR_UNARY(floor, kFloor)
OAR_UNARY(ceil, kCeil)
OAR_UNARY(reciprocal, kReciprocal)
OAR_UNARY(gelu, kGelu)
OAR_UNARY(gelu_tanh, kGeluTanh)

OAR_BINARY(add, kAdd)
OAR_BINARY(sub, kSub)
OAR_BINARY(mul, kMul)
OAR_BINARY(div, kDiv)
OAR_BINARY(maximum, kMaximum)
OAR_BINARY(minimum, kMinimum)
OAR_BINARY(pow, kPow)

OAR_COMPARE(eq, kEq)
OAR_COMPARE(ne, kNe)
OAR_COMPARE(lt, kLt)
OAR_COMPARE(le, kLe)
OAR_COMPARE(gt, kGt)
OAR_COMPARE(ge, kGe)

OAR_REDUCE(sum, kSum)
OAR_REDUCE(mean, kMean)
OAR_REDUCE(max, kMax)
OAR_REDUCE(min, kMin)
OAR_REDUCE(prod, kProd)

OAR_CAST(f32, float, f16, oar_f16_t)
OAR_CAST(f32, float, bf16, oar_bf16_t)
OAR_CAST(f16, oar_f16_t, f32, float)
OAR_CAST(bf16, oar_bf16_t, f32, float)
OAR_CAST(f16, oar_f16_t, bf16, oar_bf16_t)
OAR_CAST(bf16, oar_bf16_t, f16, oar_f16_t)

OAR_MOVES(8, uint8_t)
OAR_MOVES(16, uint16_t)
OAR_MOVES(32, uint32_t)
OAR_MOVES(64, unsigned long long)

OAR_FLOAT_TYPES(OAR_NN_ONE, unused)

OAR_MATMUL(f32, float, double)
OAR_MATMUL(f16, oar_f16_t, float)
OAR_MATMUL(bf16, oar_bf16_t, float)

OAR_INDEXED_BOTH(8, uint8_t)
OAR_INDEXED_BOTH(16, uint16_t)
OAR_INDEXED_BOTH(32, uint32_t)
OAR_INDEXED_BOTH(64, unsigned long long)
