// What the kernels need from the vendor's toolchain, in one place: CUDA's
// headers under nvcc, HIP's under hipcc (__HIPCC__). The kernels themselves
// use only what both compile: blockIdx/threadIdx/blockDim/gridDim,
// __syncthreads, __shared__, the C math functions (expf, sqrtf, ...), and the
// f16/bf16 conversions named here. A CUDA-only intrinsic goes here behind
// __HIPCC__ with its HIP equivalent, never into kernels.cu.
#pragma once

#if defined(__HIPCC__)
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_runtime.h>
typedef __hip_bfloat16 oar_bf16_t;
#else
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __nv_bfloat16 oar_bf16_t;
#endif
typedef __half oar_f16_t;

#include <stdint.h>

// Both vendors spell these alike (round to nearest even; NaN stays NaN).
#define OAR_F16_TO_FLOAT(x) __half2float(x)
#define OAR_FLOAT_TO_F16(x) __float2half_rn(x)
#define OAR_BF16_TO_FLOAT(x) __bfloat162float(x)
#define OAR_FLOAT_TO_BF16(x) __float2bfloat16_rn(x)
