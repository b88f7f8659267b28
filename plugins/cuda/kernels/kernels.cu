// The cuda plugin's device kernels: CUDA C++ that hipcc also compiles (the hip
// plugin's later stage builds this same file). Only portable constructs are
// used: blockIdx/threadIdx/blockDim/gridDim, __syncthreads, __shared__, and
// float arithmetic; f16/bf16 are converted through the vendor headers selected
// below. Every kernel has C linkage (extern "C") so that its name in the
// image is the name the plugin looks up with cuModuleGetFunction, and each
// template is instantiated once per dtype (compile time in CI stays small).
//
// The kernel list is kernels.list: the plugin embeds it, the cuobjdump check
// (check_image.cmake) and the fake driver's tests read it.
#if defined(__HIPCC__)
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
typedef __hip_bfloat16 oar_bf16_t;
#define OAR_BF16_TO_FLOAT(x) __bfloat162float(x)
#define OAR_FLOAT_TO_BF16(x) __float2bfloat16(x)
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 oar_bf16_t;
#define OAR_BF16_TO_FLOAT(x) __bfloat162float(x)
#define OAR_FLOAT_TO_BF16(x) __float2bfloat16(x)
#endif
typedef __half oar_f16_t;

#include <stdint.h>

namespace {

// Element <-> float (the arithmetic type of every floating kernel).
__device__ inline float to_float(float x) { return x; }
__device__ inline float to_float(oar_f16_t x) { return __half2float(x); }
__device__ inline float to_float(oar_bf16_t x) { return OAR_BF16_TO_FLOAT(x); }

template <typename T>
__device__ inline T from_float(float x);
template <>
__device__ inline float from_float<float>(float x) {
  return x;
}
template <>
__device__ inline oar_f16_t from_float<oar_f16_t>(float x) {
  return __float2half(x);
}
template <>
__device__ inline oar_bf16_t from_float<oar_bf16_t>(float x) {
  return OAR_FLOAT_TO_BF16(x);
}

// A grid-stride loop: any grid covers any n.
#define OAR_FOR_EACH(i, n)                                                    \
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += uint64_t(blockDim.x) * gridDim.x)

enum BinaryOp { kAdd, kSub, kMul, kDiv, kMaximum, kMinimum };
enum UnaryOp { kNeg, kAbs, kExp, kRelu };

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
    // NaN propagates as in docs/ops.md (maximum/minimum of a NaN is NaN).
    case kMaximum:
      return (a != a || b != b) ? a + b : (a > b ? a : b);
    default:
      return (a != a || b != b) ? a + b : (a < b ? a : b);
  }
}

template <int Op>
__device__ inline float unary(float a) {
  switch (Op) {
    case kNeg:
      return -a;
    case kAbs:
      return fabsf(a);
    case kExp:
      return expf(a);
    default:
      return a > 0.0f ? a : (a != a ? a : 0.0f);
  }
}

template <typename T, int Op>
__device__ inline void binary_kernel(const T* a, const T* b, T* out, uint64_t n) {
  OAR_FOR_EACH(i, n) { out[i] = from_float<T>(binary<Op>(to_float(a[i]), to_float(b[i]))); }
}

template <typename T, int Op>
__device__ inline void unary_kernel(const T* a, T* out, uint64_t n) {
  OAR_FOR_EACH(i, n) { out[i] = from_float<T>(unary<Op>(to_float(a[i]))); }
}

template <typename From, typename To>
__device__ inline void cast_kernel(const From* in, To* out, uint64_t n) {
  OAR_FOR_EACH(i, n) { out[i] = from_float<To>(to_float(in[i])); }
}

template <typename T>
__device__ inline void fill_kernel(T* out, T value, uint64_t n) {
  OAR_FOR_EACH(i, n) { out[i] = value; }
}

// Sum of n elements into one float per block (out[blockIdx.x]); a second
// launch with one block sums the partials. Block size: a power of two <= 1024.
template <typename T>
__device__ inline void sum_kernel(const T* in, float* out, uint64_t n) {
  __shared__ float partial[1024];
  float acc = 0.0f;
  OAR_FOR_EACH(i, n) { acc += to_float(in[i]); }
  partial[threadIdx.x] = acc;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) partial[threadIdx.x] += partial[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0];
}

}  // namespace

// clang-format off
#define OAR_BINARY(name, op)                                                                  \
  extern "C" __global__ void oar_##name##_f32(const float* a, const float* b, float* o,       \
                                              uint64_t n) { binary_kernel<float, op>(a, b, o, n); } \
  extern "C" __global__ void oar_##name##_f16(const oar_f16_t* a, const oar_f16_t* b,         \
                                              oar_f16_t* o, uint64_t n) {                     \
    binary_kernel<oar_f16_t, op>(a, b, o, n); }                                               \
  extern "C" __global__ void oar_##name##_bf16(const oar_bf16_t* a, const oar_bf16_t* b,      \
                                               oar_bf16_t* o, uint64_t n) {                   \
    binary_kernel<oar_bf16_t, op>(a, b, o, n); }
#define OAR_UNARY(name, op)                                                                   \
  extern "C" __global__ void oar_##name##_f32(const float* a, float* o, uint64_t n) {         \
    unary_kernel<float, op>(a, o, n); }                                                       \
  extern "C" __global__ void oar_##name##_f16(const oar_f16_t* a, oar_f16_t* o, uint64_t n) { \
    unary_kernel<oar_f16_t, op>(a, o, n); }                                                   \
  extern "C" __global__ void oar_##name##_bf16(const oar_bf16_t* a, oar_bf16_t* o,            \
                                               uint64_t n) { unary_kernel<oar_bf16_t, op>(a, o, n); }
#define OAR_CAST(from_name, from_t, to_name, to_t)                                            \
  extern "C" __global__ void oar_cast_##from_name##_##to_name(const from_t* in, to_t* out,    \
                                                              uint64_t n) {                   \
    cast_kernel<from_t, to_t>(in, out, n); }
// clang-format on

OAR_BINARY(add, kAdd)
OAR_BINARY(sub, kSub)
OAR_BINARY(mul, kMul)
OAR_BINARY(div, kDiv)
OAR_BINARY(maximum, kMaximum)
OAR_BINARY(minimum, kMinimum)

OAR_UNARY(neg, kNeg)
OAR_UNARY(abs, kAbs)
OAR_UNARY(exp, kExp)
OAR_UNARY(relu, kRelu)

OAR_CAST(f32, float, f16, oar_f16_t)
OAR_CAST(f32, float, bf16, oar_bf16_t)
OAR_CAST(f16, oar_f16_t, f32, float)
OAR_CAST(bf16, oar_bf16_t, f32, float)
OAR_CAST(f16, oar_f16_t, bf16, oar_bf16_t)
OAR_CAST(bf16, oar_bf16_t, f16, oar_f16_t)

// fill and copy by element width: a dtype's bits are all a fill needs.
extern "C" __global__ void oar_fill_b16(uint16_t* out, uint16_t value, uint64_t n) {
  fill_kernel<uint16_t>(out, value, n);
}
extern "C" __global__ void oar_fill_b32(uint32_t* out, uint32_t value, uint64_t n) {
  fill_kernel<uint32_t>(out, value, n);
}
extern "C" __global__ void oar_fill_b64(unsigned long long* out, unsigned long long value,
                                        uint64_t n) {
  fill_kernel<unsigned long long>(out, value, n);
}
extern "C" __global__ void oar_copy_b32(const uint32_t* in, uint32_t* out, uint64_t n) {
  OAR_FOR_EACH(i, n) { out[i] = in[i]; }
}

extern "C" __global__ void oar_sum_f32(const float* in, float* out, uint64_t n) {
  sum_kernel<float>(in, out, n);
}
extern "C" __global__ void oar_sum_f16(const oar_f16_t* in, float* out, uint64_t n) {
  sum_kernel<oar_f16_t>(in, out, n);
}
extern "C" __global__ void oar_sum_bf16(const oar_bf16_t* in, float* out, uint64_t n) {
  sum_kernel<oar_bf16_t>(in, out, n);
}
