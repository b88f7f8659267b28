// BLAS as the cpu kernels use it (matmul, conv2d and its gradients,
// attention): the type BLAS computes each dtype in, f16/bf16 staging through
// f32 with one rounding at the store, sgemm/dgemm, and the 32-bit size limit.
//
// f32 GEMMs (f16 and bf16 too, through f32) go to oneDNN's dnnl_sgemm where
// the build found Debian's libdnnl-dev (OAR_CPU_ONEDNN, x86-64; see
// plugins/cpu/CMakeLists.txt), else to OpenBLAS's cblas_sgemm; f64 GEMMs
// always go to OpenBLAS (oneDNN has no dgemm). On this AVX-512 machine
// oneDNN's sgemm is about 12 % faster per core than OpenBLAS's SkylakeX
// kernel at 1024^3, on a par with MKL (docs/performance.md, "BLAS for matmul
// and conv2d"). Its threads are OpenMP's, the same pool as the kernels'
// loops: inside an OpenMP region it runs on the calling thread.
//
// Threads: OpenBLAS is set to one thread the first time a kernel calls it;
// kernels that mix GEMMs with loops (conv2d and its gradients, attention,
// batched matmul) run one image, block of queries or matrix per OpenMP
// thread with one-thread GEMMs, and a lone large GEMM (matmul) raises
// OpenBLAS's thread count for its call (parallel_gemm).
// With OpenBLAS's own thread pool beside OpenMP's, the two pools' idle
// threads spin against each other on the same cores whenever a kernel
// alternates between a BLAS call and an OpenMP loop (conv2d's im2col, the
// softmax inside attention): measured on this 2-core machine, conv2d with two
// threads took 3-8x its one-thread time. The setting is process-wide:
// another OpenBLAS user in the same process gets one thread per call too.
#pragma once

#include <cblas.h>
#include <omp.h>
#if OAR_CPU_ONEDNN
#include <dnnl.h>
#endif

#include <algorithm>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/kernel.h"

namespace oar::cpu {

// The type BLAS computes T in: f64 stays f64, the others go through f32.
template <typename T>
using blas_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// The |n| elements at |p| as blas_t<T>: |p| itself for f32 and f64 (no copy),
// else an f32 copy in |buffer|.
template <typename T>
const blas_t<T>* to_blas(const T* p, int64_t n, std::vector<blas_t<T>>& buffer) {
  if constexpr (std::is_same_v<T, blas_t<T>>) {
    return p;
  } else {
    buffer.resize(size_t(n));
    float* out = buffer.data();
#pragma omp parallel for if (n > kParallelWork)
    for (int64_t i = 0; i < n; ++i) out[i] = load(p + i);
    return out;
  }
}

// Where a result of |n| elements for |p| is computed: |p| itself, or |buffer|
// that from_blas rounds into |p| afterwards.
template <typename T>
blas_t<T>* blas_output(T* p, int64_t n, std::vector<blas_t<T>>& buffer) {
  if constexpr (std::is_same_v<T, blas_t<T>>) {
    return p;
  } else {
    buffer.resize(size_t(n));
    return buffer.data();
  }
}

template <typename T>
void from_blas(const blas_t<T>* result, T* p, int64_t n) {
  if constexpr (!std::is_same_v<T, blas_t<T>>) {
#pragma omp parallel for if (n > kParallelWork)
    for (int64_t i = 0; i < n; ++i) store(p + i, result[i]);
  }
}

// OpenBLAS on one thread (see the top of this file), set once.
inline void blas_on_one_thread() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

#if OAR_CPU_ONEDNN
// dnnl_sgemm, row major like the cblas call below; on OpenMP's threads
// outside a parallel region.
inline dnnl_status_t onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, float alpha,
                                  const float* a, int64_t lda, const float* b, int64_t ldb,
                                  float beta, float* c, int64_t ldc) {
  return dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
#endif

// c[m, n] = alpha * op(a) op(b) + beta * c, row major with leading dimensions
// lda, ldb, ldc: a is [m, k] ([k, m] when |ta|), b is [k, n] ([n, k] when
// |tb|). With beta 0, c's old contents are never read (they may be NaN). Runs
// on the calling thread.
template <typename F>
void gemm_ld(bool ta, bool tb, int64_t m, int64_t n, int64_t k, F alpha, const F* a, int64_t lda,
             const F* b, int64_t ldb, F beta, F* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects a leading dimension of 0; the sum is empty
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        F& v = c[i * ldc + j];
        v = beta == F(0) ? F(0) : beta * v;
      }
    }
    return;
  }
#if OAR_CPU_ONEDNN
  if constexpr (std::is_same_v<F, float>) {
    // On the calling thread: oneDNN takes OpenMP's thread count, which is
    // one inside a parallel region and set to one here outside of one.
    const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
    if (threads > 1) omp_set_num_threads(1);
    const dnnl_status_t status = onednn_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (threads > 1) omp_set_num_threads(threads);
    oar::sdk::require(status == dnnl_success, OAR_STATUS_INTERNAL,
                      "dnnl_sgemm failed with oneDNN status " + std::to_string(int(status)));
    return;
  }
#endif
  blas_on_one_thread();
  auto op = [](bool t) { return t ? CblasTrans : CblasNoTrans; };
  if constexpr (std::is_same_v<F, double>) {
    cblas_dgemm(CblasRowMajor, op(ta), op(tb), int(m), int(n), int(k), alpha, a, int(lda), b,
                int(ldb), beta, c, int(ldc));
  } else {
    cblas_sgemm(CblasRowMajor, op(ta), op(tb), int(m), int(n), int(k), alpha, a, int(lda), b,
                int(ldb), beta, c, int(ldc));
  }
}

// gemm_ld with densely packed matrices.
template <typename F>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, F alpha, const F* a, const F* b,
          F beta, F* c) {
  gemm_ld(ta, tb, m, n, k, alpha, a, ta ? m : k, b, tb ? k : n, beta, c, n);
}

// Below this many multiply-adds a GEMM stays on one thread.
inline constexpr int64_t kParallelGemm = int64_t(1) << 20;

// One GEMM on as many threads as OpenMP's (on the calling thread alone inside
// a parallel region or when small). f32 with oneDNN: panels of c on OpenMP's
// team. Else on OpenBLAS's own threads: the thread count is raised for the
// call and set back to one after. OpenBLAS's threads share the
// packing of the operands, which panels per OpenMP thread cannot (measured:
// 1024^3 with two OpenMP panels took about 1.6x the CPU time). Another
// stream's kernel that calls BLAS inside an OpenMP region meanwhile may get
// OpenBLAS's threads too: slower for that moment, never wrong.
template <typename F>
void parallel_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, F alpha, const F* a,
                   const F* b, F beta, F* c) {
  const int threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads <= 1 || m * n * k < kParallelGemm) return gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
#if OAR_CPU_ONEDNN
  if constexpr (std::is_same_v<F, float>) {  // k > 0: kParallelGemm
    // One panel of c per OpenMP thread (rows, or columns when c is wider than
    // tall), each a one-thread dnnl_sgemm: dnnl_sgemm's own threads wait for
    // each other inside the call, which under load (a core taken by another
    // process) made 1024^3 3-5x slower than OpenBLAS (measured, load 17);
    // panels wait only at the region's end. Each thread packs the operand
    // the panels share: measured no slower than dnnl_sgemm's own threads.
    const int64_t lda = ta ? m : k, ldb = tb ? k : n;
    const bool rows = m >= n;
    const int64_t extent = rows ? m : n;
    int failed = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : failed)
    for (int p = 0; p < threads; ++p) {
      const int64_t begin = extent * p / threads, end = extent * (p + 1) / threads;
      if (end == begin) continue;
      const float* pa = rows ? (ta ? a + begin : a + begin * lda) : a;
      const float* pb = rows ? b : (tb ? b + begin * ldb : b + begin);
      float* pc = rows ? c + begin * n : c + begin;
      const int64_t pm = rows ? end - begin : m, pn = rows ? n : end - begin;
      failed |=
          onednn_sgemm(ta, tb, pm, pn, k, alpha, pa, lda, pb, ldb, beta, pc, n) != dnnl_success;
    }
    oar::sdk::require(!failed, OAR_STATUS_INTERNAL, "dnnl_sgemm failed");
    return;
  }
#endif
  blas_on_one_thread();
  openblas_set_num_threads(threads);
  gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  openblas_set_num_threads(1);
}

// BLAS takes int sizes (Debian's OpenBLAS has a 32-bit interface).
inline void require_blas_sizes(const char* op, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes) {
    oar::sdk::require(size <= INT_MAX, OAR_STATUS_INVALID_ARGUMENT,
                      std::string(op) + ": a matrix extent of " + std::to_string(size) +
                          " exceeds what the cpu plugin's BLAS takes (2^31 - 1)");
  }
}

}  // namespace oar::cpu
