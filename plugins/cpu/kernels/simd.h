// OAR_CPU_WIDEST_SIMD on a function: GCC compiles it for AVX-512
// (x86-64-v4), AVX2+FMA (x86-64-v3) and the baseline, and the loader picks the
// widest the processor runs (target_clones, an ifunc). The plugin is built for
// the baseline, where vectorized loops run on 4 f32 lanes. A result computed
// this way may depend on the clone (lanes sum in another order, FMA
// contraction), never on the thread count. Elsewhere (aarch64, clang, which
// does not clone templates) it is empty.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define OAR_CPU_WIDEST_SIMD \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define OAR_CPU_WIDEST_SIMD
#endif
