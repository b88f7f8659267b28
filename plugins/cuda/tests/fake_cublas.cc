// A fake libcublas for the cuda plugin's tests: the four entry points the
// plugin resolves (blas.h), recording each call; it computes nothing (like
// the fake driver, it is no device and never certifies anything).
//   OAR_CUDA_FAKE_CUBLAS_STATUS=<n>  cublasGemmStridedBatchedEx returns n
// Inspection: oar_cuda_fake_cublas_log() lists the calls, one per line.
#include <cublas_api.h>

#include <cstdlib>
#include <string>

#include "call_log.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct cublasContext {
  cudaStream_t stream = nullptr;
};

namespace {
oar_cuda_fake::CallLog call_log;
void log_line(const std::string& line) { call_log.add(line); }
using oar_cuda_fake::hex;
}  // namespace

FAKE_EXPORT cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  *handle = new cublasContext;
  log_line("create");
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  delete handle;
  log_line("destroy");
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t stream) {
  handle->stream = stream;
  return CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT cublasStatus_t cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* a, cudaDataType a_type, int lda, long long stride_a,
    const void* b, cudaDataType b_type, int ldb, long long stride_b, const void* beta, void* c,
    cudaDataType c_type, int ldc, long long stride_c, int batch, cublasComputeType_t compute,
    cublasGemmAlgo_t) {
  const auto op = [](cublasOperation_t o) { return o == CUBLAS_OP_N ? "N" : "T"; };
  log_line("gemm " + std::string(op(transa)) + op(transb) + " m=" + std::to_string(m) +
           " n=" + std::to_string(n) + " k=" + std::to_string(k) + " A=" + hex(a) +
           " lda=" + std::to_string(lda) + " sA=" + std::to_string(stride_a) + " B=" + hex(b) +
           " ldb=" + std::to_string(ldb) + " sB=" + std::to_string(stride_b) + " C=" + hex(c) +
           " ldc=" + std::to_string(ldc) + " sC=" + std::to_string(stride_c) +
           " batch=" + std::to_string(batch) + " types=" + std::to_string(a_type) + "," +
           std::to_string(b_type) + "," + std::to_string(c_type) + " compute=" +
           std::to_string(compute) + " alpha=" + std::to_string(*static_cast<const float*>(alpha)) +
           " beta=" + std::to_string(*static_cast<const float*>(beta)) +
           " stream=" + hex(handle->stream));
  const char* status = std::getenv("OAR_CUDA_FAKE_CUBLAS_STATUS");
  return status != nullptr ? cublasStatus_t(std::atoi(status)) : CUBLAS_STATUS_SUCCESS;
}

FAKE_EXPORT const char* oar_cuda_fake_cublas_log() { return call_log.text(); }

FAKE_EXPORT void oar_cuda_fake_cublas_clear() { call_log.clear(); }
