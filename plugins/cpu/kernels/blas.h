// OpenBLAS as the cpu kernels use it (matmul, conv2d and its gradients,
// attention): the type BLAS computes each dtype in, f16/bf16 staging through
// f32 with one rounding at the store, sgemm/dgemm, and the 32-bit size limit.
#pragma once

#include <cblas.h>

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

// c[m, n] = alpha * op(a) op(b) + beta * c, row major and densely packed: a
// is [m, k] ([k, m] when |ta|), b is [k, n] ([n, k] when |tb|). With beta 0,
// c's old contents are never read (they may be NaN).
template <typename F>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, F alpha, const F* a, const F* b,
          F beta, F* c) {
  if (m == 0 || n == 0) return;
  if (k == 0) {  // BLAS rejects a leading dimension of 0; the sum is empty
    for (int64_t i = 0; i < m * n; ++i) c[i] = beta == F(0) ? F(0) : beta * c[i];
    return;
  }
  auto op = [](bool t) { return t ? CblasTrans : CblasNoTrans; };
  const int lda = int(ta ? m : k), ldb = int(tb ? k : n);
  if constexpr (std::is_same_v<F, double>) {
    cblas_dgemm(CblasRowMajor, op(ta), op(tb), int(m), int(n), int(k), alpha, a, lda, b, ldb, beta,
                c, int(n));
  } else {
    cblas_sgemm(CblasRowMajor, op(ta), op(tb), int(m), int(n), int(k), alpha, a, lda, b, ldb, beta,
                c, int(n));
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
