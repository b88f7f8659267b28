// The HIP runtime, loaded at run time: the plugin never links libamdhip64
// (a build machine has the headers and hipcc, not necessarily a GPU or the
// runtime's device stack), it dlopen()s libamdhip64.so.5 and resolves each
// entry point it uses with dlsym. Types come from Debian's HIP 5.2 headers
// (hip_runtime_api.h); the .so.5 ABI is the one they describe (ROCm 6's
// libamdhip64.so.6 changed hipDeviceProp_t, so it is not loaded in its place).
//
// OAR_HIP_RUNTIME=<path> loads another library instead of libamdhip64.so.5:
// a test hook (tests/fake_runtime.cc), documented in README.md.
#pragma once

#ifndef __HIP_PLATFORM_AMD__
#define __HIP_PLATFORM_AMD__
#endif
#include <hip/hip_runtime_api.h>

#include <string>

namespace oar::hip {

// Every entry point the plugin calls. X(name): hip_runtime_api.h's spelling
// and the symbol resolved.
// clang-format off
#define OAR_HIP_RUNTIME_ENTRY_POINTS(X)                                                         \
  X(hipInit) X(hipDriverGetVersion) X(hipRuntimeGetVersion) X(hipGetErrorName)                  \
  X(hipGetErrorString) X(hipGetDeviceCount) X(hipGetDeviceProperties) X(hipSetDevice)           \
  X(hipDeviceSynchronize) X(hipMemGetInfo) X(hipFree) X(hipHostFree)                            \
  X(hipMemcpyHtoDAsync) X(hipMemcpyDtoHAsync) X(hipMemcpyDtoDAsync) X(hipMemsetD8Async)         \
  X(hipStreamCreateWithFlags) X(hipStreamDestroy) X(hipStreamSynchronize) X(hipStreamQuery)     \
  X(hipStreamWaitEvent) X(hipStreamAddCallback)                                                    \
  X(hipEventCreateWithFlags) X(hipEventDestroy) X(hipEventRecord) X(hipEventQuery)              \
  X(hipEventSynchronize) X(hipEventElapsedTime)                                                 \
  X(hipModuleLoadData) X(hipModuleUnload) X(hipModuleGetFunction) X(hipModuleLaunchKernel)
// The entry points the header also overloads with C++ templates: their C
// signature, spelled out (MallocFn, HostMallocFn below).
#define OAR_HIP_RUNTIME_OVERLOADED_ENTRY_POINTS(X) X(hipMalloc, MallocFn) X(hipHostMalloc, HostMallocFn)
// clang-format on
using MallocFn = hipError_t (*)(void**, size_t);
using HostMallocFn = hipError_t (*)(void**, size_t, unsigned int);

class Runtime {
 public:
  // Loads the library and resolves every entry point; never throws. On
  // failure available() is false and why() says what is missing.
  Runtime();
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  bool available() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }

  // "hipErrorIllegalAddress" (or "hipError_t 123" when the runtime cannot name it).
  std::string error_name(hipError_t result) const;
  // "hipErrorX: <runtime's description>".
  std::string error_text(hipError_t result) const;

#define OAR_HIP_DECLARE(name) decltype(&::name) name = nullptr;
  OAR_HIP_RUNTIME_ENTRY_POINTS(OAR_HIP_DECLARE)
#undef OAR_HIP_DECLARE
#define OAR_HIP_DECLARE_OVERLOADED(name, type) type name = nullptr;
  OAR_HIP_RUNTIME_OVERLOADED_ENTRY_POINTS(OAR_HIP_DECLARE_OVERLOADED)
#undef OAR_HIP_DECLARE_OVERLOADED

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string why_;
};

}  // namespace oar::hip
