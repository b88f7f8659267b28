#include "blas.h"

#include <dlfcn.h>

#include <cstdlib>

namespace oar::cuda {

Blas::~Blas() {
  if (handle_ != nullptr) dlclose(handle_);
}

bool Blas::load() {
  std::call_once(once_, [this] {
    const char* chosen = std::getenv("OAR_CUDA_CUBLAS");
    if (chosen != nullptr && std::string(chosen) == "none") {
      why_ = "OAR_CUDA_CUBLAS=none";
      return;
    }
    std::string tried;
    for (const char* name : {"libcublas.so.13", "libcublas.so.12", "libcublas.so"}) {
      const char* path = chosen != nullptr && *chosen != '\0' ? chosen : name;
      handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
      if (handle_ != nullptr) break;
      const char* error = dlerror();
      tried += std::string(tried.empty() ? "" : "; ") + (error != nullptr ? error : path);
      if (path == chosen) break;
    }
    if (handle_ == nullptr) {
      why_ = "cuBLAS not found (" + tried + ")";
      return;
    }
    create = reinterpret_cast<Create>(dlsym(handle_, "cublasCreate_v2"));
    destroy = reinterpret_cast<Destroy>(dlsym(handle_, "cublasDestroy_v2"));
    set_stream = reinterpret_cast<SetStream>(dlsym(handle_, "cublasSetStream_v2"));
    gemm = reinterpret_cast<GemmStridedBatchedEx>(dlsym(handle_, "cublasGemmStridedBatchedEx"));
    if (create == nullptr || destroy == nullptr || set_stream == nullptr || gemm == nullptr) {
      why_ =
          "cuBLAS lacks cublasCreate_v2, cublasDestroy_v2, cublasSetStream_v2 or "
          "cublasGemmStridedBatchedEx";
      dlclose(handle_);
      handle_ = nullptr;
    }
  });
  return handle_ != nullptr;
}

}  // namespace oar::cuda
