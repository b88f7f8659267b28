// NCCL, loaded at run time like the driver and cuBLAS: dlopen("libnccl.so.2")
// when the plugin starts (dlopen only: NCCL does nothing until a communicator
// is created). Devices list OAR_DEVICE_FEATURE_COLLECTIVES only when it
// loaded; the comm_* slots map one to one onto NCCL's calls.
// OAR_CUDA_NCCL=<path> loads another library (a test hook:
// tests/fake_nccl.cc); OAR_CUDA_NCCL=none never loads one.
#pragma once

#include <nccl.h>

#include <string>

namespace oar::cuda {

// clang-format off
#define OAR_NCCL_ENTRY_POINTS(X)                                                               \
  X(ncclGetUniqueId) X(ncclCommInitRank) X(ncclCommDestroy) X(ncclCommAbort)                   \
  X(ncclCommGetAsyncError) X(ncclGetErrorString) X(ncclAllReduce) X(ncclBroadcast)             \
  X(ncclReduce) X(ncclAllGather) X(ncclReduceScatter) X(ncclSend) X(ncclRecv)                  \
  X(ncclGroupStart) X(ncclGroupEnd)
// clang-format on

class Nccl {
 public:
  Nccl();  // loads the library; never throws
  ~Nccl();
  Nccl(const Nccl&) = delete;
  Nccl& operator=(const Nccl&) = delete;

  bool available() const { return handle_ != nullptr; }
  const std::string& why() const { return why_; }

#define OAR_NCCL_DECLARE(name) decltype(&::name) name = nullptr;
  OAR_NCCL_ENTRY_POINTS(OAR_NCCL_DECLARE)
#undef OAR_NCCL_DECLARE

 private:
  void* handle_ = nullptr;
  std::string why_;
};

}  // namespace oar::cuda
