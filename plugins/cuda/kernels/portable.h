// What the kernels need from the vendor's toolchain, in one place: CUDA's
// headers under nvcc, HIP's under hipcc (__HIPCC__). The kernels themselves
// use only what both compile: blockIdx/threadIdx/blockDim/gridDim,
// __syncthreads, __shared__, the C math functions (expf, sqrtf, ...), and the
// f16/bf16 conversions named here. A CUDA-only intrinsic goes here behind
// __HIPCC__ with its HIP equivalent, never into kernels.cu.
#pragma once

#include <stdint.h>

#if defined(__HIPCC__)
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
// HIP before 5.6 (Debian 12 has 5.2) has no hip_bf16.h: bf16 is its 16 bits
// here, converted exactly as __float2bfloat16_rn does (round to nearest
// even; a NaN stays a quiet NaN of the same sign).
struct oar_bf16_t {
  uint16_t bits;
};
__device__ inline float oar_bf16_to_float(oar_bf16_t x) {
  return __uint_as_float(uint32_t(x.bits) << 16);
}
__device__ inline oar_bf16_t oar_float_to_bf16_rn(float f) {
  const uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {uint16_t((u >> 16) | 0x0040u)};
  return {uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16)};
}
#define OAR_BF16_TO_FLOAT(x) oar_bf16_to_float(x)
#define OAR_FLOAT_TO_BF16(x) oar_float_to_bf16_rn(x)
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 oar_bf16_t;
#define OAR_BF16_TO_FLOAT(x) __bfloat162float(x)
#define OAR_FLOAT_TO_BF16(x) __float2bfloat16_rn(x)
#endif
typedef __half oar_f16_t;

// Both vendors spell these alike (round to nearest even; NaN stays NaN).
#define OAR_F16_TO_FLOAT(x) __half2float(x)
#define OAR_FLOAT_TO_F16(x) __float2half_rn(x)
