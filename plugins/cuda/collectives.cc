#include "collectives.h"

#include <dlfcn.h>

#include <cstdlib>

namespace oar::cuda {

Nccl::Nccl() {
  const char* chosen = std::getenv("OAR_CUDA_NCCL");
  if (chosen != nullptr && std::string(chosen) == "none") {
    why_ = "OAR_CUDA_NCCL=none";
    return;
  }
  const char* path = chosen != nullptr && *chosen != '\0' ? chosen : "libnccl.so.2";
  handle_ = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle_ == nullptr) {
    const char* error = dlerror();
    why_ = std::string("NCCL not found (") + (error != nullptr ? error : path) + ")";
    return;
  }
  std::string missing;
#define OAR_NCCL_RESOLVE(name)                                    \
  name = reinterpret_cast<decltype(name)>(dlsym(handle_, #name)); \
  if (name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + #name;
  OAR_NCCL_ENTRY_POINTS(OAR_NCCL_RESOLVE)
#undef OAR_NCCL_RESOLVE
  if (!missing.empty()) {
    why_ = std::string(path) + " lacks " + missing;
    dlclose(handle_);
    handle_ = nullptr;
  }
}

Nccl::~Nccl() {
  if (handle_ != nullptr) dlclose(handle_);
}

}  // namespace oar::cuda
