// The CUDA driver API, loaded at run time: the plugin never links libcuda
// (the toolkit on build machines has no driver), it dlopen()s libcuda.so.1 and
// resolves each entry point it uses with dlsym. Types and versioned names come
// from the toolkit's cuda.h: `cuMemAlloc` there is a macro for the ABI name
// `cuMemAlloc_v2`, which is the symbol resolved.
//
// OAR_CUDA_DRIVER=<path> loads another library instead of libcuda.so.1: a test
// hook (tests/fake_driver.cc), documented in README.md.
#pragma once

#include <cuda.h>

#include <string>

namespace oar::cuda {

// Every entry point the plugin calls. X(name): `name` is cuda.h's spelling.
// clang-format off
#define OAR_CUDA_DRIVER_ENTRY_POINTS(X)                                                        \
  X(cuInit) X(cuDriverGetVersion) X(cuGetErrorName) X(cuGetErrorString)                        \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName) X(cuDeviceTotalMem)                    \
  X(cuDeviceGetAttribute)                                                                      \
  X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease) X(cuCtxSetCurrent)                  \
  X(cuCtxSynchronize) X(cuMemGetInfo)                                                          \
  X(cuMemAlloc) X(cuMemFree) X(cuMemHostAlloc) X(cuMemFreeHost)                                \
  X(cuMemcpyHtoDAsync) X(cuMemcpyDtoHAsync) X(cuMemcpyAsync) X(cuMemsetD8Async)                \
  X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuStreamQuery)                 \
  X(cuStreamWaitEvent) X(cuLaunchHostFunc)                                                     \
  X(cuEventCreate) X(cuEventDestroy) X(cuEventRecord) X(cuEventQuery) X(cuEventSynchronize)    \
  X(cuEventElapsedTime)                                                                        \
  X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction) X(cuLaunchKernel)               \
  X(cuDeviceCanAccessPeer) X(cuCtxEnablePeerAccess) X(cuMemcpyPeerAsync)
// clang-format on

class Driver {
 public:
  // Loads the library and resolves every entry point; never throws. On
  // failure available() is false and why() says what is missing.
  Driver();
  ~Driver();
  Driver(const Driver&) = delete;
  Driver& operator=(const Driver&) = delete;

  bool available() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }

  // "CUDA_ERROR_ILLEGAL_ADDRESS" (or "CUresult 123" when the driver cannot name it).
  std::string error_name(CUresult result) const;
  // "CUDA_ERROR_X: <driver's description>".
  std::string error_text(CUresult result) const;

#define OAR_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  OAR_CUDA_DRIVER_ENTRY_POINTS(OAR_CUDA_DECLARE)
#undef OAR_CUDA_DECLARE

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string why_;
};

}  // namespace oar::cuda
