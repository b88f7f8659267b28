// OpenBLAS as the cpu kernels use it (matmul, conv2d and its gradients,
// attention): the type BLAS computes each dtype in, f16/bf16 staging through
// f32 with one rounding at the store, sgemm/dgemm, and the 32-bit size limit.
//
// Threads: the kernels' parallel work is OpenMP's alone. OpenBLAS is set to
// one thread the first time a kernel calls it, and the kernels share a GEMM
// out across OpenMP's threads themselves (parallel_gemm: row or column
// panels; conv2d and attention: one image or block of queries per thread).
// With OpenBLAS's own thread pool beside OpenMP's, the two pools' idle
// threads spin against each other on the same cores whenever a kernel
// alternates between a BLAS call and an OpenMP loop (conv2d's im2col, the
// softmax inside attention): measured on this 2-core machine, conv2d with two
// threads took 3-8x its one-thread time. The setting is process-wide:
// another OpenBLAS user in the same process gets one thread per call too.
#pragma once

#include <cblas.h>
#include <omp.h>

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

// gemm shared out across OpenMP's threads (on the calling thread alone inside
// a parallel region or when small): each thread takes a panel of rows of c
// (of columns when c has fewer rows than columns). The panels follow the
// thread count, and OpenBLAS may sum a small panel in another order than a
// large one, so results may differ in the last bits between thread counts,
// as they could under OpenBLAS's own threads.
template <typename F>
void parallel_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, F alpha, const F* a,
                   const F* b, F beta, F* c) {
  const int64_t threads = omp_in_parallel() ? 1 : omp_get_max_threads();
  if (threads <= 1 || m * n * k < kParallelGemm) return gemm(ta, tb, m, n, k, alpha, a, b, beta, c);
  const int64_t lda = ta ? m : k, ldb = tb ? k : n;
  const bool by_rows = m >= n;
  const int64_t extent = by_rows ? m : n;
  // Panels of whole 16s (the micro-kernels' widths divide 16), one per thread.
  const int64_t panel = std::max<int64_t>(16, ((extent + threads - 1) / threads + 15) / 16 * 16);
  const int64_t panels = (extent + panel - 1) / panel;
#pragma omp parallel for num_threads(int(threads)) schedule(static)
  for (int64_t p = 0; p < panels; ++p) {
    const int64_t begin = p * panel, size = std::min(extent, begin + panel) - begin;
    if (by_rows) {
      gemm_ld(ta, tb, size, n, k, alpha, ta ? a + begin : a + begin * lda, lda, b, ldb, beta,
              c + begin * n, n);
    } else {
      gemm_ld(ta, tb, m, size, k, alpha, a, lda, tb ? b + begin * ldb : b + begin, ldb, beta,
              c + begin, n);
    }
  }
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
