// cuBLAS, loaded at run time like the driver: dlopen("libcublas.so.13"), then
// .so.12 and libcublas.so, at the first matmul that wants it. Without it the
// plugin loads and serves its devices as before, and matmul runs OAR's own
// kernel (kernels.cu). OAR_CUDA_CUBLAS=<path> loads another library (a test
// hook: tests/fake_cublas.cc); OAR_CUDA_CUBLAS=none never loads one.
#pragma once

#include <cublas_api.h>

#include <mutex>
#include <string>

namespace oar::cuda {

class Blas {
 public:
  using Create = cublasStatus_t (*)(cublasHandle_t*);
  using Destroy = cublasStatus_t (*)(cublasHandle_t);
  using SetStream = cublasStatus_t (*)(cublasHandle_t, cudaStream_t);
  using GemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                  cublasOperation_t, int, int, int, const void*,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, cudaDataType, int, long long,
                                                  const void*, void*, cudaDataType, int, long long,
                                                  int, cublasComputeType_t, cublasGemmAlgo_t);

  Blas() = default;
  ~Blas();
  Blas(const Blas&) = delete;
  Blas& operator=(const Blas&) = delete;

  // Loads the library once (thread-safe); false, with why(), if there is none.
  bool load();
  const std::string& why() const { return why_; }

  Create create = nullptr;
  Destroy destroy = nullptr;
  SetStream set_stream = nullptr;
  GemmStridedBatchedEx gemm = nullptr;

 private:
  std::once_flag once_;
  void* handle_ = nullptr;
  std::string why_;
};

}  // namespace oar::cuda
