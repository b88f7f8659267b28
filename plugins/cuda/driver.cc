#include "driver.h"

#include <dlfcn.h>

#include <cstdlib>

namespace oar::cuda {
namespace {

#define OAR_CUDA_STRING_INNER(x) #x
// Expands cuda.h's macro first: "cuMemAlloc" -> "cuMemAlloc_v2".
#define OAR_CUDA_STRING(x) OAR_CUDA_STRING_INNER(x)

}  // namespace

Driver::Driver() {
  const char* override_path = std::getenv("OAR_CUDA_DRIVER");
  path_ = override_path != nullptr && *override_path != '\0' ? override_path : "libcuda.so.1";
  void* handle = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    why_ = "no NVIDIA driver: " + path_ + " not found" +
           (error != nullptr ? std::string(" (") + error + ")" : std::string());
    return;
  }
  std::string missing;
#define OAR_CUDA_RESOLVE(name)                                                   \
  name = reinterpret_cast<decltype(name)>(dlsym(handle, OAR_CUDA_STRING(name))); \
  if (name == nullptr) missing += std::string(missing.empty() ? "" : ", ") + OAR_CUDA_STRING(name);
  OAR_CUDA_DRIVER_ENTRY_POINTS(OAR_CUDA_RESOLVE)
#undef OAR_CUDA_RESOLVE
  if (!missing.empty()) {
    why_ = "the NVIDIA driver " + path_ + " is too old: it lacks " + missing;
    dlclose(handle);
    return;
  }
  handle_ = handle;
}

Driver::~Driver() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string Driver::error_name(CUresult result) const {
  const char* name = nullptr;
  if (cuGetErrorName != nullptr && cuGetErrorName(result, &name) == CUDA_SUCCESS &&
      name != nullptr) {
    return name;
  }
  return "CUresult " + std::to_string(int(result));
}

std::string Driver::error_text(CUresult result) const {
  std::string text = error_name(result);
  const char* description = nullptr;
  if (cuGetErrorString != nullptr && cuGetErrorString(result, &description) == CUDA_SUCCESS &&
      description != nullptr) {
    text += std::string(": ") + description;
  }
  return text;
}

}  // namespace oar::cuda
