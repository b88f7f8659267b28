#include "runtime.h"

#include <dlfcn.h>

#include <cstdlib>

namespace oar::hip {

Runtime::Runtime() {
  const char* override_path = std::getenv("OAR_HIP_RUNTIME");
  path_ = override_path != nullptr && *override_path != '\0' ? override_path : "libamdhip64.so.5";
  void* handle = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* error = dlerror();
    why_ = "no HIP runtime: " + path_ + " not found" +
           (error != nullptr ? std::string(" (") + error + ")" : std::string());
    return;
  }
  std::string missing;
  auto resolve = [&](const char* name) {
    void* symbol = dlsym(handle, name);
    if (symbol == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
    return symbol;
  };
#define OAR_HIP_RESOLVE(name) name = reinterpret_cast<decltype(name)>(resolve(#name));
  OAR_HIP_RUNTIME_ENTRY_POINTS(OAR_HIP_RESOLVE)
#undef OAR_HIP_RESOLVE
#define OAR_HIP_RESOLVE_OVERLOADED(name, type) name = reinterpret_cast<type>(resolve(#name));
  OAR_HIP_RUNTIME_OVERLOADED_ENTRY_POINTS(OAR_HIP_RESOLVE_OVERLOADED)
#undef OAR_HIP_RESOLVE_OVERLOADED
  if (!missing.empty()) {
    why_ = "the HIP runtime " + path_ + " is too old: it lacks " + missing;
    dlclose(handle);
    return;
  }
  handle_ = handle;
}

Runtime::~Runtime() {
  if (handle_ != nullptr) dlclose(handle_);
}

std::string Runtime::error_name(hipError_t result) const {
  const char* name = hipGetErrorName != nullptr ? hipGetErrorName(result) : nullptr;
  // The runtime names an unknown code "hipErrorUnknown"; keep the number then.
  if (name != nullptr && *name != '\0' &&
      (result == hipErrorUnknown || std::string(name) != "hipErrorUnknown")) {
    return name;
  }
  return "hipError_t " + std::to_string(int(result));
}

std::string Runtime::error_text(hipError_t result) const {
  std::string text = error_name(result);
  const char* description = hipGetErrorString != nullptr ? hipGetErrorString(result) : nullptr;
  if (description != nullptr && *description != '\0') text += std::string(": ") + description;
  return text;
}

}  // namespace oar::hip
