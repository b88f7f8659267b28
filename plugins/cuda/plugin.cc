// The cuda plugin: NVIDIA GPUs through the CUDA driver API, loaded at run time
// (driver.h). Without a driver or a device it loads, serves zero devices and
// says why (a warning through the host's logger, shown by `oar list`).
//
// Handles: an oar_memory_t is the CUdeviceptr of a device allocation or the
// host pointer of a pinned one (both are addresses under CUDA's unified
// addressing); streams and events wrap CUstream / CUevent. Each device handle
// holds its device's primary context, made current on every call, and the
// module of the plugin's kernels (kernels/kernels.cu, embedded as a fatbin).
//
// Errors: a failed driver call throws with the CUresult's name. Streams,
// events, host callbacks and the asynchronous error model (a faulting kernel
// fails its stream) are plugins/common/gpu_stream.h's, shared with the hip
// plugin; DriverApi below is the driver's part of them.
//
// NCCL's asynchronous errors: a collective whose peer failed never completes,
// and CUDA cannot tell; NCCL reports it through ncclCommGetAsyncError. So a
// stream remembers the communicators of the collectives enqueued on it since
// it was last seen idle (an event, those of its stream at the record), and
// waiting for it (stream_synchronize, device_synchronize, event_synchronize)
// polls CUDA and those communicators' asynchronous errors instead of blocking
// in the driver; stream_query checks them once when the stream is busy. An
// error aborts the communicator (ncclCommAbort ends its kernels, so the
// stream drains) and fails the stream with UNAVAILABLE, naming the rank and
// NCCL's error; the communicator's later calls say ABORTED, and comm_destroy
// only forgets it.
//
// Shutdown order (device_close, and finalize for devices a host leaked): the
// streams (synchronized, pending callbacks settled, destroyed), the events,
// the allocations, the module, then the primary context is released.
#include "oar/sdk/plugin.hpp"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "blas.h"
#include "collectives.h"
#include "driver.h"
#include "gpu_stream.h"
#include "kernels_image.h"
#include "oar/dtype.hpp"
#include "oar/oar.h"
#include "oar/ops.hpp"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"
#include "operators.h"

namespace oar::cuda {
namespace sdk = oar::sdk;

// The oldest GPU the embedded kernels run on (their lowest SASS and PTX).
constexpr int kMinComputeCapability = 80;
constexpr uint64_t kAlignment = 256;  // cuMemAlloc aligns to at least this

// What a failure of the driver becomes in OAR's codes.
oar_status_t status_of(CUresult result) {
  switch (result) {
    case CUDA_SUCCESS:
      return OAR_STATUS_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
      return OAR_STATUS_RESOURCE_EXHAUSTED;
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
      return OAR_STATUS_INVALID_ARGUMENT;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
      return OAR_STATUS_UNAVAILABLE;
    case CUDA_ERROR_LAUNCH_TIMEOUT:
      return OAR_STATUS_DEADLINE_EXCEEDED;
    case CUDA_ERROR_ECC_UNCORRECTABLE:
      return OAR_STATUS_DATA_LOSS;
    case CUDA_ERROR_NOT_FOUND:
      return OAR_STATUS_NOT_FOUND;
    case CUDA_ERROR_NOT_SUPPORTED:
      return OAR_STATUS_UNIMPLEMENTED;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_ASSERT:
      return OAR_STATUS_ABORTED;
    default:
      return OAR_STATUS_INTERNAL;
  }
}

// The errors after which the context is unusable (CUDA's sticky errors): they
// come from asynchronous work, so they fail the stream that reports them.
bool is_sticky(CUresult result) {
  switch (result) {
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_ASSERT:
      return true;
    default:
      return false;
  }
}

// The driver API as plugins/common/gpu_stream.h sees it.
struct DriverApi {
  using Result = CUresult;
  using Stream = CUstream;
  using Event = CUevent;
  using DevicePtr = CUdeviceptr;
  static constexpr Result kSuccess = CUDA_SUCCESS;
  static constexpr Result kNotReady = CUDA_ERROR_NOT_READY;
  static constexpr const char* kPlugin = "cuda";
  static constexpr const char* kMakeCurrent = "cuCtxSetCurrent";
  static constexpr const char* kDeviceSynchronize = "cuCtxSynchronize";
  static constexpr const char* kStreamCreate = "cuStreamCreate";
  static constexpr const char* kStreamQuery = "cuStreamQuery";
  static constexpr const char* kStreamSynchronize = "cuStreamSynchronize";
  static constexpr const char* kStreamWaitEvent = "cuStreamWaitEvent";
  static constexpr const char* kAddHostCallback = "cuLaunchHostFunc";
  static constexpr const char* kEventCreate = "cuEventCreate";
  static constexpr const char* kEventRecord = "cuEventRecord";
  static constexpr const char* kEventQuery = "cuEventQuery";
  static constexpr const char* kEventSynchronize = "cuEventSynchronize";
  static constexpr const char* kEventElapsed = "cuEventElapsedTime";

  static constexpr const char* kMemGetInfo = "cuMemGetInfo";
  static constexpr const char* kAllocDevice = "cuMemAlloc";
  static constexpr const char* kAllocHost = "cuMemHostAlloc";
  static constexpr const char* kCopyToDevice = "cuMemcpyHtoDAsync";
  static constexpr const char* kCopyToHost = "cuMemcpyDtoHAsync";
  static constexpr const char* kCopyOnDevice = "cuMemcpyAsync";
  static constexpr const char* kLaunch = "cuLaunchKernel";
  static constexpr const char* kFill = "cuMemsetD8Async";

  static oar_status_t status_of(Result result) { return cuda::status_of(result); }
  static bool is_sticky(Result result) { return cuda::is_sticky(result); }
  std::string error_text(Result result) const { return driver.error_text(result); }

  Result make_current(const oar_device_s* device) const;
  Result device_synchronize() const { return driver.cuCtxSynchronize(); }
  Result stream_create(Stream* stream) const {
    return driver.cuStreamCreate(stream, CU_STREAM_NON_BLOCKING);
  }
  Result stream_destroy(Stream stream) const { return driver.cuStreamDestroy(stream); }
  Result stream_query(Stream stream) const { return driver.cuStreamQuery(stream); }
  Result stream_synchronize(Stream stream) const { return driver.cuStreamSynchronize(stream); }
  Result stream_wait_event(Stream stream, Event event) const {
    return driver.cuStreamWaitEvent(stream, event, 0);
  }
  Result add_host_callback(Stream stream, gpu::HostCallback* callback) const {
    return driver.cuLaunchHostFunc(stream, &host_function, callback);
  }
  Result event_create(Event* event, bool timing) const {
    return driver.cuEventCreate(event, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING);
  }
  Result event_destroy(Event event) const { return driver.cuEventDestroy(event); }
  Result event_record(Event event, Stream stream) const {
    return driver.cuEventRecord(event, stream);
  }
  Result event_query(Event event) const { return driver.cuEventQuery(event); }
  Result event_synchronize(Event event) const { return driver.cuEventSynchronize(event); }
  Result event_elapsed(float* ms, Event start, Event end) const {
    return driver.cuEventElapsedTime(ms, start, end);
  }
  Result copy_to_host(void* dst, DevicePtr src, size_t size, Stream stream) const {
    return driver.cuMemcpyDtoHAsync(dst, src, size, stream);
  }
  Result free(DevicePtr memory) const { return driver.cuMemFree(memory); }
  Result free_host(void* memory) const { return driver.cuMemFreeHost(memory); }
  Result mem_get_info(size_t* free, size_t* total) const {
    return driver.cuMemGetInfo(free, total);
  }
  Result alloc_device(void** address, size_t size) const {
    CUdeviceptr pointer = 0;
    const Result result = driver.cuMemAlloc(&pointer, size);
    *address = reinterpret_cast<void*>(uintptr_t(pointer));
    return result;
  }
  Result alloc_host(void** address, size_t size) const {
    return driver.cuMemHostAlloc(address, size, CU_MEMHOSTALLOC_PORTABLE);
  }
  Result copy_to_device(DevicePtr dst, const void* src, size_t size, Stream stream) const {
    return driver.cuMemcpyHtoDAsync(dst, src, size, stream);
  }
  Result copy_on_device(DevicePtr dst, DevicePtr src, size_t size, Stream stream) const {
    return driver.cuMemcpyAsync(dst, src, size, stream);
  }
  Result fill(DevicePtr dst, uint8_t value, size_t size, Stream stream) const {
    return driver.cuMemsetD8Async(dst, value, size, stream);
  }
  // One launch of |function|, its parameters packed in one buffer
  // (CU_LAUNCH_PARAM_BUFFER_POINTER).
  Result launch(CUfunction function, uint32_t grid, uint32_t block, Stream stream,
                const void* params, size_t size) const {
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(params),
                     CU_LAUNCH_PARAM_BUFFER_SIZE, &size, CU_LAUNCH_PARAM_END};
    return driver.cuLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, nullptr, extra);
  }
  static DevicePtr address(oar_memory_t memory, uint64_t offset) {
    return CUdeviceptr(reinterpret_cast<uintptr_t>(memory)) + offset;
  }

  // cuLaunchHostFunc's function: the driver calls it on its own thread once
  // the stream's earlier work completed.
  static void CUDA_CB host_function(void* callback);

  const Driver& driver;
};

}  // namespace oar::cuda

struct oar_device_s;

struct oar_comm_s;

struct oar_stream_s : oar::gpu::StreamState<oar::cuda::DriverApi> {
  // The communicators of the collectives enqueued since the stream was last
  // seen idle, each once (guarded by mutex).
  std::vector<oar_comm_s*> collectives;
};
struct oar_event_s : oar::gpu::EventState<oar::cuda::DriverApi> {
  std::vector<oar_comm_s*> collectives;  // its stream's at the record
};

// A member of an NCCL communicator on one device.
struct oar_comm_s {
  oar_device_s* device = nullptr;
  ncclComm_t comm = nullptr;
  int32_t nranks = 0, rank = 0;
  std::mutex mutex;           // guards aborted and failure
  bool aborted = false;       // ncclCommAbort freed it: comm_destroy only forgets it
  oar::gpu::Failure failure;  // NCCL's asynchronous error, once seen
};

struct oar_device_s {
  int32_t index = 0;  // OAR's index
  CUdevice device = 0;
  CUcontext context = nullptr;
  CUmodule module = nullptr;
  std::map<std::string, CUfunction> functions;  // every kernel of the module
  cublasHandle_t blas = nullptr;                // created at the first matmul through cuBLAS
  std::mutex mutex;
  std::unordered_set<oar_stream_s*> streams;
  std::unordered_set<oar_event_s*> events;
};

namespace oar::cuda {

class CudaPlugin final : public Launcher, public gpu::GpuStreams<CudaPlugin, DriverApi> {
 public:
  CudaPlugin() {
    const std::string why = discover();
    if (!why.empty()) {
      sdk::log(OAR_LOG_LEVEL_WARNING, "cuda: " + why + ". The plugin serves 0 devices.");
    }
  }

  ~CudaPlugin() override { close_all(); }

  // --- operators ----------------------------------------------------------------

  void register_kernels(const oar_kernel_registrar_t* registrar) {
    sdk::require_not_null(registrar, "registrar");
    register_operators(sdk::KernelRegistrar(registrar), table_, this);
  }

  void check_tensor(const oar_kernel_call_t& call, const DLTensor& t,
                    const char* what) const override {
    check_call_tensor(call, t, what);
  }

  void launch(const oar_kernel_call_t& call, const char* kernel, uint32_t grid,
              const ArgPack& args) override {
    launch_kernel(call, kernel, grid, kMaxGrid, kBlock, args.data(), args.size());
  }

  // matmul through cuBLAS (blas.h): row-major y = a * b is column-major
  // y^T = b^T * a^T, so b goes first; a transposed operand is cuBLAS's
  // CUBLAS_OP_T with its stored row length as the leading dimension.
  bool gemm(const oar_kernel_call_t& call, const Gemm& g) override {
    if (!blas_.load()) {
      if (!blas_warned_.exchange(true)) {
        sdk::log(OAR_LOG_LEVEL_INFO, "cuda: " + blas_.why() + ": matmul runs OAR's own kernel");
      }
      return false;
    }
    oar_device_s* device = call.device;
    oar_stream_s* stream = call.stream;
    require_device(device);
    sdk::require_not_null(stream, "stream");
    raise_if_failed(stream);
    current(device);
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      if (device->blas == nullptr) {
        const cublasStatus_t status = blas_.create(&device->blas);
        sdk::require(status == CUBLAS_STATUS_SUCCESS, OAR_STATUS_INTERNAL,
                     "cuda: cublasCreate failed: cuBLAS status " + std::to_string(int(status)));
      }
    }
    const cudaDataType type = g.dtype.bits == 32          ? CUDA_R_32F
                              : g.dtype.code == kDLBfloat ? CUDA_R_16BF
                                                          : CUDA_R_16F;
    const float alpha = 1.0f, beta = 0.0f;
    cublasStatus_t status = blas_.set_stream(device->blas, cudaStream_t(stream->stream));
    if (status == CUBLAS_STATUS_SUCCESS) {
      status = blas_.gemm(
          device->blas, g.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N,
          g.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N, g.n, g.m, g.k, &alpha,
          reinterpret_cast<const void*>(uintptr_t(g.b)), type, g.transpose_b ? g.k : g.n,
          g.stride_b, reinterpret_cast<const void*>(uintptr_t(g.a)), type,
          g.transpose_a ? g.m : g.k, g.stride_a, &beta, reinterpret_cast<void*>(uintptr_t(g.y)),
          type, g.n, g.stride_y, g.batch, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    }
    sdk::require(
        status == CUBLAS_STATUS_SUCCESS, OAR_STATUS_INTERNAL,
        "cuda: cublasGemmStridedBatchedEx failed: cuBLAS status " + std::to_string(int(status)));
    return true;
  }

  uint64_t error_word(const oar_kernel_call_t& call) override {
    return stream_error_word(call.stream);
  }

  // --- collectives (NCCL, collectives.h) ---------------------------------------------------

  void comm_unique_id_size(size_t* out_size) {
    require_nccl();
    sdk::require_not_null(out_size, "out_size");
    *out_size = sizeof(ncclUniqueId);
  }

  void comm_get_unique_id(void* out_id, size_t size) {
    require_nccl();
    sdk::require_not_null(out_id, "out_id");
    sdk::require(size == sizeof(ncclUniqueId), OAR_STATUS_INVALID_ARGUMENT,
                 "comm_get_unique_id: size must be comm_unique_id_size's");
    ncclUniqueId id;
    check_nccl(nccl_.ncclGetUniqueId(&id), "ncclGetUniqueId");
    std::memcpy(out_id, &id, sizeof id);
  }

  void comm_create(oar_device_t device, int32_t nranks, int32_t rank, const void* id,
                   size_t id_size, oar_comm_t* out_comm) {
    require_nccl();
    require_device(device);
    sdk::require_not_null(id, "id");
    sdk::require_not_null(out_comm, "out_comm");
    sdk::require(nranks >= 1 && rank >= 0 && rank < nranks, OAR_STATUS_INVALID_ARGUMENT,
                 "comm_create: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
    sdk::require(id_size == sizeof(ncclUniqueId), OAR_STATUS_INVALID_ARGUMENT,
                 "comm_create: id_size must be comm_unique_id_size's");
    ncclUniqueId unique;
    std::memcpy(&unique, id, sizeof unique);
    current(device);
    auto comm = std::make_unique<oar_comm_s>();
    comm->device = device;
    comm->nranks = nranks;
    comm->rank = rank;
    check_nccl(nccl_.ncclCommInitRank(&comm->comm, nranks, unique, rank), "ncclCommInitRank");
    *out_comm = comm.release();
  }

  void comm_destroy(oar_comm_t comm) {
    if (comm == nullptr) return;
    std::unique_ptr<oar_comm_s> owned(comm);
    forget_collectives(comm);
    if (comm->aborted) return;
    current(comm->device);
    check_nccl(nccl_.ncclCommDestroy(comm->comm), "ncclCommDestroy");
  }

  void comm_abort(oar_comm_t comm) {
    sdk::require_not_null(comm, "comm");
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (comm->aborted) return;
    comm->aborted = true;
    check_nccl(nccl_.ncclCommAbort(comm->comm), "ncclCommAbort");
  }

  void comm_all_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                       uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                       uint64_t count, DLDataType dtype, int32_t op) {
    const ncclDataType_t type = collective(comm, stream, dtype, true);
    const ncclRedOp_t reduce = reduce_op(op);
    const uint64_t bytes = count * (dtype.bits / 8);
    allocations_.check_range(send, send_offset, bytes, "comm_all_reduce send");
    allocations_.check_range(recv, recv_offset, bytes, "comm_all_reduce recv");
    check_nccl(nccl_.ncclAllReduce(pointer(send, send_offset), pointer(recv, recv_offset), count,
                                   type, reduce, comm->comm, stream->stream),
               "ncclAllReduce");
    enqueued(comm, stream);
  }

  void comm_broadcast(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                      oar_memory_t recv, uint64_t recv_offset, uint64_t count, DLDataType dtype,
                      int32_t root) {
    const ncclDataType_t type = collective(comm, stream, dtype, false);
    require_rank(comm, root, "root");
    const uint64_t bytes = count * (dtype.bits / 8);
    if (comm->rank == root) allocations_.check_range(send, send_offset, bytes, "broadcast send");
    allocations_.check_range(recv, recv_offset, bytes, "comm_broadcast recv");
    check_nccl(nccl_.ncclBroadcast(comm->rank == root ? pointer(send, send_offset) : nullptr,
                                   pointer(recv, recv_offset), count, type, root, comm->comm,
                                   stream->stream),
               "ncclBroadcast");
    enqueued(comm, stream);
  }

  void comm_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                   oar_memory_t recv, uint64_t recv_offset, uint64_t count, DLDataType dtype,
                   int32_t op, int32_t root) {
    const ncclDataType_t type = collective(comm, stream, dtype, true);
    const ncclRedOp_t reduce = reduce_op(op);
    require_rank(comm, root, "root");
    const uint64_t bytes = count * (dtype.bits / 8);
    allocations_.check_range(send, send_offset, bytes, "comm_reduce send");
    if (comm->rank == root) allocations_.check_range(recv, recv_offset, bytes, "reduce recv");
    check_nccl(nccl_.ncclReduce(pointer(send, send_offset),
                                comm->rank == root ? pointer(recv, recv_offset) : nullptr, count,
                                type, reduce, root, comm->comm, stream->stream),
               "ncclReduce");
    enqueued(comm, stream);
  }

  void comm_all_gather(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                       uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                       uint64_t count, DLDataType dtype) {
    const ncclDataType_t type = collective(comm, stream, dtype, false);
    const uint64_t bytes = count * (dtype.bits / 8);
    allocations_.check_range(send, send_offset, bytes, "comm_all_gather send");
    allocations_.check_range(recv, recv_offset, bytes * uint64_t(comm->nranks),
                             "comm_all_gather recv");
    check_nccl(nccl_.ncclAllGather(pointer(send, send_offset), pointer(recv, recv_offset), count,
                                   type, comm->comm, stream->stream),
               "ncclAllGather");
    enqueued(comm, stream);
  }

  void comm_reduce_scatter(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                           uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                           uint64_t count, DLDataType dtype, int32_t op) {
    const ncclDataType_t type = collective(comm, stream, dtype, true);
    const ncclRedOp_t reduce = reduce_op(op);
    const uint64_t bytes = count * (dtype.bits / 8);
    allocations_.check_range(send, send_offset, bytes * uint64_t(comm->nranks),
                             "comm_reduce_scatter send");
    allocations_.check_range(recv, recv_offset, bytes, "comm_reduce_scatter recv");
    check_nccl(nccl_.ncclReduceScatter(pointer(send, send_offset), pointer(recv, recv_offset),
                                       count, type, reduce, comm->comm, stream->stream),
               "ncclReduceScatter");
    enqueued(comm, stream);
  }

  // Block i of |send| to rank i, rank i's block into block i of |recv|: one
  // NCCL group of nranks sends and receives.
  void comm_all_to_all(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                       uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                       uint64_t count, DLDataType dtype) {
    const ncclDataType_t type = collective(comm, stream, dtype, false);
    const uint64_t bytes = count * (dtype.bits / 8);
    allocations_.check_range(send, send_offset, bytes * uint64_t(comm->nranks),
                             "comm_all_to_all send");
    allocations_.check_range(recv, recv_offset, bytes * uint64_t(comm->nranks),
                             "comm_all_to_all recv");
    check_nccl(nccl_.ncclGroupStart(), "ncclGroupStart");
    ncclResult_t result = ncclSuccess;
    for (int32_t peer = 0; peer < comm->nranks && result == ncclSuccess; ++peer) {
      const uint64_t at = uint64_t(peer) * bytes;
      result = nccl_.ncclSend(pointer(send, send_offset + at), count, type, peer, comm->comm,
                              stream->stream);
      if (result == ncclSuccess) {
        result = nccl_.ncclRecv(pointer(recv, recv_offset + at), count, type, peer, comm->comm,
                                stream->stream);
      }
    }
    const ncclResult_t ended = nccl_.ncclGroupEnd();
    check_nccl(result, "ncclSend/ncclRecv");
    check_nccl(ended, "ncclGroupEnd");
    enqueued(comm, stream);
  }

  void comm_send(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                 uint64_t count, DLDataType dtype, int32_t peer) {
    const ncclDataType_t type = collective(comm, stream, dtype, false);
    require_rank(comm, peer, "peer");
    allocations_.check_range(send, send_offset, count * (dtype.bits / 8), "comm_send");
    check_nccl(
        nccl_.ncclSend(pointer(send, send_offset), count, type, peer, comm->comm, stream->stream),
        "ncclSend");
    enqueued(comm, stream);
  }

  void comm_recv(oar_comm_t comm, oar_stream_t stream, oar_memory_t recv, uint64_t recv_offset,
                 uint64_t count, DLDataType dtype, int32_t peer) {
    const ncclDataType_t type = collective(comm, stream, dtype, false);
    require_rank(comm, peer, "peer");
    allocations_.check_range(recv, recv_offset, count * (dtype.bits / 8), "comm_recv");
    check_nccl(
        nccl_.ncclRecv(pointer(recv, recv_offset), count, type, peer, comm->comm, stream->stream),
        "ncclRecv");
    enqueued(comm, stream);
  }

  void comm_group_begin() {
    require_nccl();
    check_nccl(nccl_.ncclGroupStart(), "ncclGroupStart");
  }

  void comm_group_end() {
    require_nccl();
    check_nccl(nccl_.ncclGroupEnd(), "ncclGroupEnd");
  }

  // --- devices ------------------------------------------------------------------

  void device_count(int32_t* out_count) {
    sdk::require_not_null(out_count, "out_count");
    *out_count = int32_t(devices_.size());
  }

  void device_properties(int32_t index, oar_device_properties_t* out_properties) {
    require_index(index);
    sdk::copy_properties(devices_[size_t(index)].properties, out_properties);
  }

  void device_open(int32_t index, oar_device_t* out_device) {
    require_index(index);
    sdk::require_not_null(out_device, "out_device");
    auto device = std::make_unique<oar_device_s>();
    device->index = index;
    device->device = devices_[size_t(index)].device;
    check(driver_.cuDevicePrimaryCtxRetain(&device->context, device->device),
          "cuDevicePrimaryCtxRetain");
    std::string what = "cuCtxSetCurrent";
    CUresult result = driver_.cuCtxSetCurrent(device->context);
    if (result == CUDA_SUCCESS) {
      what = "cuModuleLoadData";
      result = driver_.cuModuleLoadData(&device->module, kernel_image());
    }
    for (size_t i = 0; result == CUDA_SUCCESS && i < kernel_count(); ++i) {
      CUfunction function = nullptr;
      what = std::string("cuModuleGetFunction(") + kernel_names()[i] + ")";
      result = driver_.cuModuleGetFunction(&function, device->module, kernel_names()[i]);
      if (result == CUDA_SUCCESS) device->functions.emplace(kernel_names()[i], function);
    }
    if (result != CUDA_SUCCESS) {
      if (device->module != nullptr) driver_.cuModuleUnload(device->module);
      driver_.cuDevicePrimaryCtxRelease(device->device);
      check(result, what.c_str());
    }
    *out_device = add_open(std::move(device));
  }

  // --- memory (the rest is gpu_stream.h's) -----------------------------------------

  // A copy from another device of the plugin (cuMemcpyPeerAsync): directly
  // where the driver says the two GPUs reach each other (peer access is
  // enabled once per pair, in the destination's context), else staged by
  // the driver.
  void memory_copy_peer(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                        oar_device_t src_device, oar_memory_t src, uint64_t src_offset,
                        uint64_t size) {
    sdk::require_not_null(stream, "stream");
    require_device(src_device);
    sdk::AllocationTable::Allocation from, to;
    sdk::require(allocations_.find(src, &from) && from.device == src_device,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_copy_peer: the source is not memory of src_device");
    sdk::require(allocations_.find(dst, &to) && to.device == stream->device,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_copy_peer: the destination is not memory of the stream's device");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_peer destination");
    allocations_.check_range(src, src_offset, size, "memory_copy_peer source");
    if (size == 0) return;
    raise_if_failed(stream);
    oar_device_s* device = stream->device;
    current(device);
    if (src_device->device != device->device) enable_peer(device, src_device);
    enqueue(stream,
            driver_.cuMemcpyPeerAsync(DriverApi::address(dst, dst_offset), device->context,
                                      DriverApi::address(src, src_offset), src_device->context,
                                      size_t(size), stream->stream),
            "cuMemcpyPeerAsync");
  }

 private:
  // Lets |device|'s context read |peer|'s memory directly, once per pair,
  // where the driver says it can (|device|'s context is current).
  void enable_peer(oar_device_s* device, oar_device_s* peer) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!peers_.insert({device->device, peer->device}).second) return;
    int can = 0;
    if (driver_.cuDeviceCanAccessPeer(&can, device->device, peer->device) != CUDA_SUCCESS || !can) {
      return;  // cuMemcpyPeerAsync stages through the host
    }
    const CUresult result = driver_.cuCtxEnablePeerAccess(peer->context, 0);
    if (result != CUDA_SUCCESS && result != CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED) {
      sdk::log(OAR_LOG_LEVEL_WARNING,
               "cuda: cuCtxEnablePeerAccess(" + std::to_string(device->index) + " -> " +
                   std::to_string(peer->index) + ") failed: " + driver_.error_name(result) +
                   "; peer copies are staged by the driver");
    }
  }

  // --- NCCL's asynchronous errors (see the top of this file) ------------------------

  // A collective of |comm| is on |stream|: waiting for the stream watches it.
  static void enqueued(oar_comm_s* comm, oar_stream_s* stream) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    auto& list = stream->collectives;
    if (std::find(list.begin(), list.end(), comm) == list.end()) list.push_back(comm);
  }

  // |comm| is going: no stream or event of its device watches it any more.
  static void forget_collectives(oar_comm_s* comm) {
    oar_device_s* device = comm->device;
    std::lock_guard<std::mutex> lock(device->mutex);
    for (oar_stream_s* stream : device->streams) {
      std::lock_guard<std::mutex> stream_lock(stream->mutex);
      auto& list = stream->collectives;
      list.erase(std::remove(list.begin(), list.end(), comm), list.end());
    }
    for (oar_event_s* event : device->events) {
      auto& list = event->collectives;
      list.erase(std::remove(list.begin(), list.end(), comm), list.end());
    }
  }

  // NCCL's asynchronous error of |comm|: the first one seen aborts it and
  // stays its failure.
  gpu::Failure async_failure(oar_comm_s* comm) {
    std::lock_guard<std::mutex> lock(comm->mutex);
    if (comm->failure.failed() || comm->aborted) return comm->failure;
    ncclResult_t error = ncclSuccess;
    const ncclResult_t asked = nccl_.ncclCommGetAsyncError(comm->comm, &error);
    if (asked != ncclSuccess) error = asked;
    if (error == ncclSuccess || error == ncclInProgress) return {};
    comm->aborted = true;
    (void)nccl_.ncclCommAbort(comm->comm);
    comm->failure = {OAR_STATUS_UNAVAILABLE,
                     "cuda: the NCCL communicator (rank " + std::to_string(comm->rank) + " of " +
                         std::to_string(comm->nranks) +
                         ") failed: " + nccl_.ncclGetErrorString(error) +
                         " (ncclCommGetAsyncError; a peer may have died); it was aborted: "
                         "destroy it and create a new one"};
    return comm->failure;
  }

  // Until |idle| (a query of CUDA: CUDA_ERROR_NOT_READY while busy) says the
  // work is done, or once when |wait| is false: the first asynchronous
  // error of |comms|. Polls with a growing pause, up to 1 ms.
  template <class Query>
  gpu::Failure watch(const std::vector<oar_comm_s*>& comms, bool wait, bool* out_idle,
                     Query&& idle) {
    *out_idle = false;
    for (int round = 0;; ++round) {
      if (idle() != CUDA_ERROR_NOT_READY) {
        *out_idle = true;  // done, or failed: the driver's wait that follows says which
        return {};
      }
      for (oar_comm_s* comm : comms) {
        gpu::Failure failure = async_failure(comm);
        if (failure.failed()) return failure;
      }
      if (!wait) return {};
      if (round < 64) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(std::min(1000, 10 * (round - 63))));
      }
    }
  }

  // GpuStreams' hooks (plugins/common/gpu_stream.h).
  gpu::Failure watch_stream(oar_stream_s* stream, bool wait) {
    std::vector<oar_comm_s*> comms;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      comms = stream->collectives;
    }
    if (comms.empty()) return {};
    bool idle = false;
    gpu::Failure failure =
        watch(comms, wait, &idle, [&] { return driver_.cuStreamQuery(stream->stream); });
    if (idle) {
      std::lock_guard<std::mutex> lock(stream->mutex);
      stream->collectives.clear();
    }
    return failure;
  }

  void event_recorded(oar_event_s* event, oar_stream_s* stream) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    event->collectives = stream->collectives;
  }

  gpu::Failure watch_event(oar_event_s* event) {
    if (event->collectives.empty()) return {};
    bool idle = false;
    return watch(event->collectives, true, &idle,
                 [&] { return driver_.cuEventQuery(event->event); });
  }

  void require_nccl() const {
    sdk::require(nccl_.available(), OAR_STATUS_UNIMPLEMENTED,
                 "cuda: no collectives: " + nccl_.why());
  }

  void check_nccl(ncclResult_t result, const char* call) const {
    if (result == ncclSuccess) return;
    oar_status_t code = OAR_STATUS_INTERNAL;
    if (result == ncclInvalidArgument || result == ncclInvalidUsage) {
      code = OAR_STATUS_INVALID_ARGUMENT;
    } else if (result == ncclSystemError || result == ncclRemoteError) {
      code = OAR_STATUS_UNAVAILABLE;
    }
    throw sdk::Error(code,
                     std::string("cuda: ") + call + " failed: " + nccl_.ncclGetErrorString(result));
  }

  static void require_rank(oar_comm_t comm, int32_t rank, const char* what) {
    sdk::require(rank >= 0 && rank < comm->nranks, OAR_STATUS_INVALID_ARGUMENT,
                 std::string("cuda: ") + what + " " + std::to_string(rank) + " is not a rank of " +
                     std::to_string(comm->nranks));
  }

  static void* pointer(oar_memory_t memory, uint64_t offset) {
    return reinterpret_cast<char*>(memory) + offset;
  }

  // Checks a collective call and returns NCCL's type for |dtype|; bool
  // only moves (|reduces| false). i16 has no NCCL type.
  ncclDataType_t collective(oar_comm_t comm, oar_stream_t stream, DLDataType dtype, bool reduces) {
    require_nccl();
    sdk::require_not_null(comm, "comm");
    sdk::require_not_null(stream, "stream");
    {
      std::lock_guard<std::mutex> lock(comm->mutex);
      sdk::require(!comm->aborted, OAR_STATUS_ABORTED,
                   comm->failure.failed() ? comm->failure.message + " (aborted)"
                                          : "cuda: the communicator was aborted");
    }
    sdk::require(stream->device == comm->device, OAR_STATUS_INVALID_ARGUMENT,
                 "cuda: the stream belongs to another device than the communicator");
    raise_if_failed(stream);
    current(stream->device);
    const uint32_t bit = ops::dtype_bit(dtype);
    switch (bit) {
      case ops::kF16:
        return ncclFloat16;
      case ops::kBF16:
        return ncclBfloat16;
      case ops::kF32:
        return ncclFloat32;
      case ops::kF64:
        return ncclFloat64;
      case ops::kI32:
        return ncclInt32;
      case ops::kI64:
        return ncclInt64;
      case ops::kI8:
        return ncclInt8;
      case ops::kU8:
        return ncclUint8;
      case ops::kBool:
        if (!reduces) return ncclUint8;
        break;
      default:
        break;
    }
    throw sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                     "cuda: NCCL has no " + std::string(reduces ? "reduction" : "transfer") +
                         " of " + dtype_name(dtype));
  }

  static ncclRedOp_t reduce_op(int32_t op) {
    switch (op) {
      case OAR_REDUCE_OP_SUM:
        return ncclSum;
      case OAR_REDUCE_OP_PROD:
        return ncclProd;
      case OAR_REDUCE_OP_MAX:
        return ncclMax;
      case OAR_REDUCE_OP_MIN:
        return ncclMin;
      case OAR_REDUCE_OP_AVG:
        return ncclAvg;
      default:
        throw sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                         "cuda: reduce op " + std::to_string(op) + " is not one of OAR's");
    }
  }

  struct DeviceInfo {
    CUdevice device = 0;
    oar_device_properties_t properties{};
  };

  // Loads the driver and lists the devices; returns why there are none.
  std::string discover() {
    if (!driver_.available()) return driver_.why();
    CUresult result = driver_.cuInit(0);
    if (result == CUDA_ERROR_NO_DEVICE) return "no device (cuInit: CUDA_ERROR_NO_DEVICE)";
    if (result != CUDA_SUCCESS) return "cuInit failed: " + driver_.error_name(result);
    int count = 0;
    result = driver_.cuDeviceGetCount(&count);
    if (result != CUDA_SUCCESS) return "cuDeviceGetCount failed: " + driver_.error_name(result);
    if (count == 0) return "no device";
    int version = 0;
    driver_.cuDriverGetVersion(&version);
    const std::string driver_version = "CUDA driver API " + std::to_string(version / 1000) + "." +
                                       std::to_string(version % 1000 / 10);
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      std::string problem = describe(i, driver_version, &info);
      if (problem.empty()) {
        devices_.push_back(info);
      } else {
        sdk::log(OAR_LOG_LEVEL_WARNING,
                 "cuda: device " + std::to_string(i) + " skipped: " + problem);
      }
    }
    if (devices_.empty()) return "no usable device (" + std::to_string(count) + " skipped)";
    return "";
  }

  std::string describe(int ordinal, const std::string& driver_version, DeviceInfo* info) {
    CUdevice device = 0;
    CUresult result = driver_.cuDeviceGet(&device, ordinal);
    if (result != CUDA_SUCCESS) return "cuDeviceGet: " + driver_.error_name(result);
    char name[OAR_DEVICE_NAME_SIZE] = {};
    size_t total = 0;
    int major = 0, minor = 0, units = 0;
    result = driver_.cuDeviceGetName(name, int(sizeof name) - 1, device);
    if (result == CUDA_SUCCESS) result = driver_.cuDeviceTotalMem(&total, device);
    if (result == CUDA_SUCCESS)
      result = driver_.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                                            device);
    if (result == CUDA_SUCCESS)
      result = driver_.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                                            device);
    if (result == CUDA_SUCCESS)
      result =
          driver_.cuDeviceGetAttribute(&units, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device);
    if (result != CUDA_SUCCESS) return "reading its properties: " + driver_.error_name(result);
    const int capability = major * 10 + minor;
    if (capability < kMinComputeCapability) {
      return std::string(name) + " is sm_" + std::to_string(capability) +
             ", older than sm_80, the oldest target of the plugin's kernels";
    }
    info->device = device;
    oar_device_properties_t& p = info->properties;
    p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    sdk::copy_text(p.name, name);
    sdk::copy_text(p.vendor, "NVIDIA");
    sdk::copy_text(p.driver_version, driver_version + ", sm_" + std::to_string(capability));
    p.kind = OAR_DEVICE_KIND_GPU;
    p.dlpack_device_type = kDLCUDA;
    p.total_memory = total;
    p.max_allocation_size = total;
    p.min_alignment = kAlignment;
    p.memory_kinds = OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED;
    // Every GPU the kernels run on (sm_80+) computes f16, bf16 and f64 and
    // has int8 dot products (dp4a, sm_61+).
    p.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64 |
               OAR_DTYPE_SUPPORT_INT8_DOT;
    p.native_dtypes = p.dtypes;  // in hardware on every sm_80+ GPU
    p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
                 OAR_DEVICE_FEATURE_HOST_CALLBACKS;
    if (nccl_.available()) p.features |= OAR_DEVICE_FEATURE_COLLECTIVES;
    // Any two CUDA devices of a process copy to each other (cuMemcpyPeerAsync;
    // directly over NVLink/PCIe where cuDeviceCanAccessPeer allows it).
    int count = 0;
    if (driver_.cuDeviceGetCount(&count) == CUDA_SUCCESS && count > 1) {
      p.features |= OAR_DEVICE_FEATURE_PEER_ACCESS;
    }
    p.compute_units = uint32_t(units);
    return "";
  }

  void require_index(int32_t index) const {
    sdk::require(index >= 0 && size_t(index) < devices_.size(), OAR_STATUS_OUT_OF_RANGE,
                 "device index " + std::to_string(index) + " is out of range (" +
                     std::to_string(devices_.size()) + " device(s))");
  }

  static void require_device(oar_device_t device) { sdk::require_not_null(device, "device"); }

  const oar_device_properties_t& properties(const oar_device_s* device) const {
    return devices_[size_t(device->index)].properties;
  }

  // Shutdown order: streams, events, memory, module, context.
  void release(oar_device_s* device) {
    const bool usable = close_handles(device);
    if (usable && device->blas != nullptr) blas_.destroy(device->blas);
    if (usable && device->module != nullptr) driver_.cuModuleUnload(device->module);
    driver_.cuDevicePrimaryCtxRelease(device->device);
    delete device;
  }

  friend class gpu::GpuStreams<CudaPlugin, DriverApi>;
  DriverApi gpu_api() const { return {driver_}; }

  Driver driver_;  // first member: unloaded last
  Blas blas_;      // loaded at the first matmul; unloaded before the driver
  Nccl nccl_;      // loaded with the plugin (dlopen only); decides COLLECTIVES
  std::atomic<bool> blas_warned_{false};
  std::vector<DeviceInfo> devices_;
  std::mutex mutex_;
  std::set<std::pair<CUdevice, CUdevice>> peers_;  // pairs whose peer access was tried
  sdk::KernelTable table_;  // the registered operators (called until finalize)
};

DriverApi::Result DriverApi::make_current(const oar_device_s* device) const {
  return driver.cuCtxSetCurrent(device->context);
}

void CUDA_CB DriverApi::host_function(void* callback) {
  CudaPlugin::on_host_callback(static_cast<gpu::HostCallback*>(callback), OAR_STATUS_OK);
}

}  // namespace oar::cuda

OAR_PLUGIN_DEFINE(oar::cuda::CudaPlugin, OAR_PLUGIN_NAME, "0.1.0", "OAR project")
