#include "icd.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <mutex>

#include "oar/sdk/plugin.hpp"

namespace oar::opencl {
namespace {

struct Loaded {
  ClApi api;
  bool ok = false;
  std::string why;
};

const Loaded& loaded() {
  static const Loaded result = [] {
    Loaded l;
    const char* configured = secure_getenv("OAR_OPENCL_LIBRARY");
    std::string library =
        configured != nullptr && *configured != '\0' ? configured : "libOpenCL.so.1";
    // RTLD_NODELETE: the loader and the drivers it opened keep threads of
    // their own; they must outlive this plugin's unloading.
    void* handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const char* error = dlerror();
      l.why = "the OpenCL ICD loader " + library + " cannot be loaded (" +
              (error != nullptr ? error : "unknown error") +
              "): install it (Debian: ocl-icd-libopencl1) with an ICD such as pocl-opencl-icd, "
              "or point OAR_OPENCL_LIBRARY at a libOpenCL";
      return l;
    }
#define OAR_CL_LOAD(name)                                                                        \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(handle, #name));                     \
  if (l.api.name == nullptr) {                                                                   \
    l.why = library + " lacks " #name                                                            \
                      " (an OpenCL 1.2 entry point): install an OpenCL 1.2 or newer ICD loader"; \
    return l;                                                                                    \
  }
    OAR_CL_FUNCTIONS(OAR_CL_LOAD)
#undef OAR_CL_LOAD
    l.ok = true;
    return l;
  }();
  return result;
}

}  // namespace

const ClApi* load_cl_api(std::string* why) {
  const Loaded& l = loaded();
  if (!l.ok && why != nullptr) *why = l.why;
  return l.ok ? &l.api : nullptr;
}

const ClApi& cl() {
  const Loaded& l = loaded();
  if (!l.ok) throw oar::sdk::Error(OAR_STATUS_UNAVAILABLE, "opencl: " + l.why);
  return l.api;
}

}  // namespace oar::opencl
