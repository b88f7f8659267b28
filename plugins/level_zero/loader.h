// The Level Zero loader, opened at run time: the plugin never links
// libze_loader (a machine without it still loads the plugin), it dlopen()s
// libze_loader.so.1 and resolves each entry point it uses with dlsym. Types
// come from Debian's libze-dev (level_zero/ze_api.h, API 1.4).
//
// OAR_LEVEL_ZERO_LOADER=<path> opens another library instead: the test hook
// (tests/fake_loader.cc), documented in README.md.
#pragma once

#include <level_zero/ze_api.h>

#include <string>

namespace oar::level_zero {

// Every entry point the plugin calls.
// clang-format off
#define OAR_ZE_ENTRY_POINTS(X)                                                                  \
  X(zeInit) X(zeDriverGet) X(zeDriverGetProperties) X(zeDriverGetApiVersion)                    \
  X(zeDeviceGet) X(zeDeviceGetProperties) X(zeDeviceGetComputeProperties)                       \
  X(zeDeviceGetMemoryProperties) X(zeDeviceGetModuleProperties)                                 \
  X(zeDeviceGetCommandQueueGroupProperties)                                                     \
  X(zeContextCreate) X(zeContextDestroy)                                                        \
  X(zeMemAllocDevice) X(zeMemAllocHost) X(zeMemAllocShared) X(zeMemFree)                        \
  X(zeCommandListCreateImmediate) X(zeCommandListDestroy)                                       \
  X(zeCommandListAppendMemoryCopy) X(zeCommandListAppendMemoryFill)                             \
  X(zeCommandListAppendBarrier) X(zeCommandListAppendSignalEvent)                               \
  X(zeCommandListAppendWaitOnEvents) X(zeCommandListAppendWriteGlobalTimestamp)                 \
  X(zeCommandListAppendLaunchKernel)                                                            \
  X(zeEventPoolCreate) X(zeEventPoolDestroy) X(zeEventCreate) X(zeEventDestroy)                 \
  X(zeEventHostSynchronize) X(zeEventQueryStatus) X(zeEventHostSignal)                          \
  X(zeModuleCreate) X(zeModuleDestroy) X(zeModuleBuildLogGetString) X(zeModuleBuildLogDestroy)  \
  X(zeKernelCreate) X(zeKernelDestroy) X(zeKernelSetArgumentValue) X(zeKernelSetGroupSize)      \
  X(zeKernelSuggestGroupSize)
// clang-format on

class Loader {
 public:
  // Opens the library and resolves every entry point; never throws. On
  // failure available() is false and why() says what is missing.
  Loader();
  ~Loader();
  Loader(const Loader&) = delete;
  Loader& operator=(const Loader&) = delete;

  bool available() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& path() const { return path_; }

#define OAR_ZE_DECLARE(name) decltype(&::name) name = nullptr;
  OAR_ZE_ENTRY_POINTS(OAR_ZE_DECLARE)
#undef OAR_ZE_DECLARE

 private:
  void* handle_ = nullptr;
  std::string path_;
  std::string why_;
};

// "ZE_RESULT_ERROR_DEVICE_LOST" (or "ze_result_t 0x..." for a code it does
// not know).
std::string result_name(ze_result_t result);

}  // namespace oar::level_zero
