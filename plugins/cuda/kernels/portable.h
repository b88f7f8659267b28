// What the kernels need from the vendor's toolchain, in one place: CUDA's
// headers under nvcc, HIP's under hipcc (__HIPCC__). The kernels themselves
// use only what both compile: blockIdx/threadIdx/blockDim/gridDim,
// __syncthreads, __shared__, atomicCAS, the C math functions (expf, sqrtf,
// ...), and the f16/bf16 conversions named here. A CUDA-only intrinsic goes
// here behind __HIPCC__ with its HIP equivalent, never into kernels.cu.
//
// A third branch, OAR_KERNELS_ON_HOST, lets a plain C++17 compiler build
// kernels.cu for a unit test of the kernels' arithmetic and indexing
// (tests/kernels_on_host_test.cc): a host emulation, not a device. There
// __global__/__device__ are empty, __shared__ is `static` (one copy per
// kernel instantiation, which is right because the test runs a launch's
// blocks one after another), threadIdx/blockIdx/blockDim/gridDim are
// thread_local variables the launcher sets for each emulated thread, and
// __syncthreads waits on the block's barrier (oar_host_block_barrier, which
// the launcher provides). f16/bf16 are the plugin SDK's storage types and
// conversions (round to nearest even); the math functions are the C
// library's, so the host run checks formulas and indexing, not the
// device's ulp errors, warp timing or memory model.
#pragma once

#include <stdint.h>

#if defined(OAR_KERNELS_ON_HOST)
#include <math.h>
#include <string.h>

#include "oar/sdk/kernel.hpp"

#define __global__
#define __device__
#define __shared__ static

struct oar_host_dim3 {
  unsigned int x, y, z;
};
inline thread_local oar_host_dim3 threadIdx{0, 0, 0};
inline thread_local oar_host_dim3 blockIdx{0, 0, 0};
inline thread_local oar_host_dim3 blockDim{1, 1, 1};
inline thread_local oar_host_dim3 gridDim{1, 1, 1};

// Every thread of the running block waits here until all have arrived
// (defined by the test's launcher: a reusable barrier).
void oar_host_block_barrier();
inline void __syncthreads() { oar_host_block_barrier(); }

inline unsigned int atomicCAS(unsigned int* address, unsigned int compare, unsigned int value) {
  __atomic_compare_exchange_n(address, &compare, value, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
  return compare;  // the old value, as CUDA's atomicCAS returns it
}
inline unsigned int __float_as_uint(float f) {
  unsigned int u;
  memcpy(&u, &f, sizeof(u));
  return u;
}
inline float __uint_as_float(unsigned int u) {
  float f;
  memcpy(&f, &u, sizeof(f));
  return f;
}

typedef oar::sdk::half oar_f16_t;
typedef oar::sdk::bfloat16 oar_bf16_t;
#define OAR_F16_TO_FLOAT(x) oar::sdk::half_to_float((x).bits)
#define OAR_FLOAT_TO_F16(x) (oar_f16_t{oar::sdk::float_to_half(x)})
#define OAR_BF16_TO_FLOAT(x) oar::sdk::bf16_to_float((x).bits)
#define OAR_FLOAT_TO_BF16(x) (oar_bf16_t{oar::sdk::float_to_bf16(x)})
#else
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
#endif
