// A fake libnccl.so.2 for the cuda plugin's tests: the entry points the
// plugin resolves (collectives.h), recording each call; it moves no data and
// joins no peers (a communicator of any size is created at once).
//   OAR_CUDA_FAKE_NCCL_RESULT=<n>       every collective call returns ncclResult_t n
//   OAR_CUDA_FAKE_NCCL_ASYNC_ERROR=<n>  ncclCommGetAsyncError reports n (a peer's
//                                       death, with OAR_CUDA_FAKE_STALL of the
//                                       fake driver for the collective that hangs)
// Inspection: oar_cuda_fake_nccl_log() lists the calls, one per line.
#include <nccl.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "call_log.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

struct ncclComm {
  int nranks = 0, rank = 0;
};

namespace {
oar_cuda_fake::CallLog call_log;
void log_line(const std::string& line) { call_log.add(line); }
using oar_cuda_fake::hex;
ncclResult_t result() {
  const char* value = std::getenv("OAR_CUDA_FAKE_NCCL_RESULT");
  return value != nullptr ? ncclResult_t(std::atoi(value)) : ncclSuccess;
}
std::string common(size_t count, ncclDataType_t type, cudaStream_t stream) {
  return " count=" + std::to_string(count) + " type=" + std::to_string(int(type)) +
         " stream=" + (stream != nullptr ? "set" : "null");
}
}  // namespace

FAKE_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  std::memset(id->internal, 0x5a, sizeof id->internal);
  log_line("GetUniqueId");
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  if (id.internal[0] != 0x5a) return ncclInvalidArgument;  // not an id of GetUniqueId
  *comm = new ncclComm{nranks, rank};
  log_line("CommInitRank nranks=" + std::to_string(nranks) + " rank=" + std::to_string(rank));
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  delete comm;
  log_line("CommDestroy");
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  delete comm;
  log_line("CommAbort");
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t, ncclResult_t* error) {
  const char* value = std::getenv("OAR_CUDA_FAKE_NCCL_ASYNC_ERROR");
  *error = value != nullptr ? ncclResult_t(std::atoi(value)) : ncclSuccess;
  return ncclSuccess;
}

FAKE_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  static std::string text;
  text = "fake NCCL error " + std::to_string(int(result));
  return text.c_str();
}

FAKE_EXPORT ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count,
                                       ncclDataType_t type, ncclRedOp_t op, ncclComm_t,
                                       cudaStream_t stream) {
  log_line("AllReduce send=" + hex(send) + " recv=" + hex(recv) + common(count, type, stream) +
           " op=" + std::to_string(int(op)));
  return result();
}

FAKE_EXPORT ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count,
                                       ncclDataType_t type, int root, ncclComm_t,
                                       cudaStream_t stream) {
  log_line("Broadcast send=" + hex(send) + " recv=" + hex(recv) + common(count, type, stream) +
           " root=" + std::to_string(root));
  return result();
}

FAKE_EXPORT ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t type,
                                    ncclRedOp_t op, int root, ncclComm_t, cudaStream_t stream) {
  log_line("Reduce send=" + hex(send) + " recv=" + hex(recv) + common(count, type, stream) +
           " op=" + std::to_string(int(op)) + " root=" + std::to_string(root));
  return result();
}

FAKE_EXPORT ncclResult_t ncclAllGather(const void* send, void* recv, size_t count,
                                       ncclDataType_t type, ncclComm_t, cudaStream_t stream) {
  log_line("AllGather send=" + hex(send) + " recv=" + hex(recv) + common(count, type, stream));
  return result();
}

FAKE_EXPORT ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count,
                                           ncclDataType_t type, ncclRedOp_t op, ncclComm_t,
                                           cudaStream_t stream) {
  log_line("ReduceScatter send=" + hex(send) + " recv=" + hex(recv) + common(count, type, stream) +
           " op=" + std::to_string(int(op)));
  return result();
}

FAKE_EXPORT ncclResult_t ncclSend(const void* send, size_t count, ncclDataType_t type, int peer,
                                  ncclComm_t, cudaStream_t stream) {
  log_line("Send buf=" + hex(send) + common(count, type, stream) + " peer=" + std::to_string(peer));
  return result();
}

FAKE_EXPORT ncclResult_t ncclRecv(void* recv, size_t count, ncclDataType_t type, int peer,
                                  ncclComm_t, cudaStream_t stream) {
  log_line("Recv buf=" + hex(recv) + common(count, type, stream) + " peer=" + std::to_string(peer));
  return result();
}

FAKE_EXPORT ncclResult_t ncclGroupStart() {
  log_line("GroupStart");
  return ncclSuccess;
}

FAKE_EXPORT ncclResult_t ncclGroupEnd() {
  log_line("GroupEnd");
  return ncclSuccess;
}

FAKE_EXPORT const char* oar_cuda_fake_nccl_log() { return call_log.text(); }

FAKE_EXPORT void oar_cuda_fake_nccl_clear() { call_log.clear(); }
