// The hip plugin: AMD GPUs (and Hygon DCUs) through the HIP runtime, loaded at
// run time (runtime.h). Without the runtime or a device it loads, serves zero
// devices and says why (a warning through the host's logger, shown by
// `oar list`).
//
// The kernels are the cuda plugin's (plugins/cuda/kernels/kernels.cu, CUDA C++
// that hipcc compiles), embedded as one clang offload bundle of code objects,
// one per gfx target, and loaded with hipModuleLoadData. The operators are the
// cuda plugin's too (plugins/cuda/operators.cc): this file is their Launcher.
// matmul is always OAR's own kernel (Debian 12 has no hipBLAS); there are no
// collective slots (no RCCL): the core's host-staged engine serves
// collectives.
//
// Handles: an oar_memory_t is the address of a device allocation (hipMalloc)
// or of pinned host memory (hipHostMalloc); streams and events wrap
// hipStream_t / hipEvent_t. The runtime keeps a current device per thread:
// every call makes the handle's device current first.
//
// Errors: a failed runtime call throws with the hipError_t's name. An error of
// asynchronous work (a faulting kernel) fails the stream that reported it:
// stream_synchronize / stream_query return it from then on, events recorded
// afterwards carry it, and host callbacks that the runtime will no longer run
// are called with it.
//
// Shutdown order (device_close, and finalize for devices a host leaked): the
// streams (synchronized, pending callbacks settled, destroyed), the events,
// the allocations, then the module.
#include "oar/sdk/plugin.hpp"

#include <dlpack/dlpack.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "kernels_image.h"
#include "oar/dtype.hpp"
#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"
#include "operators.h"
#include "runtime.h"

#ifndef OAR_HIP_TARGETS
#error "OAR_HIP_TARGETS (the gfx targets of the embedded code objects, comma separated) is unset"
#endif

namespace oar::hip {
namespace sdk = oar::sdk;
using cuda::ArgPack;
using cuda::Gemm;
using cuda::kBlock;
using cuda::kMaxGrid;

constexpr uint64_t kAlignment = 256;   // hipMalloc aligns to at least this
constexpr size_t kErrorWordSize = 24;  // kernels.cu's ErrorWord

// The gfx targets of the embedded code objects ("gfx90a,gfx1030").
std::vector<std::string> targets() {
  std::vector<std::string> list;
  const std::string all = OAR_HIP_TARGETS;
  for (size_t start = 0; start < all.size();) {
    size_t comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    if (comma > start) list.push_back(all.substr(start, comma - start));
    start = comma + 1;
  }
  return list;
}

// What the hardware of a gfx target computes itself (docs/abi.md, "Native
// arithmetic"): f16 and f64 on every target; bf16 in the matrix cores of
// CDNA 1-3 (gfx908, gfx90a, gfx94x); int8 dot products (v_dot4_i32_i8) on
// gfx906, CDNA and RDNA 1.1/2.
uint32_t native_dtypes(const std::string& arch) {
  uint32_t bits = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_F64;
  if (arch == "gfx908" || arch == "gfx90a" || arch.rfind("gfx94", 0) == 0) {
    bits |= OAR_DTYPE_SUPPORT_BF16;
  }
  if (arch == "gfx906" || arch == "gfx908" || arch == "gfx90a" || arch.rfind("gfx94", 0) == 0 ||
      arch == "gfx1011" || arch == "gfx1012" || arch.rfind("gfx103", 0) == 0) {
    bits |= OAR_DTYPE_SUPPORT_INT8_DOT;
  }
  return bits;
}

// What a failure of the runtime becomes in OAR's codes.
oar_status_t status_of(hipError_t result) {
  switch (result) {
    case hipSuccess:
      return OAR_STATUS_OK;
    case hipErrorOutOfMemory:
      return OAR_STATUS_RESOURCE_EXHAUSTED;
    case hipErrorInvalidValue:
    case hipErrorInvalidHandle:
    case hipErrorInvalidDevicePointer:
      return OAR_STATUS_INVALID_ARGUMENT;
    case hipErrorNoDevice:
    case hipErrorInvalidDevice:
      return OAR_STATUS_UNAVAILABLE;
    case hipErrorLaunchTimeOut:
      return OAR_STATUS_DEADLINE_EXCEEDED;
    case hipErrorECCNotCorrectable:
      return OAR_STATUS_DATA_LOSS;
    case hipErrorNotFound:
      return OAR_STATUS_NOT_FOUND;
    case hipErrorNotSupported:
      return OAR_STATUS_UNIMPLEMENTED;
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorAssert:
      return OAR_STATUS_ABORTED;
    default:
      return OAR_STATUS_INTERNAL;
  }
}

// The errors of asynchronous work after which the device is unusable: they
// fail the stream that reports them.
bool is_sticky(hipError_t result) {
  switch (result) {
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorLaunchTimeOut:
    case hipErrorECCNotCorrectable:
    case hipErrorAssert:
      return true;
    default:
      return false;
  }
}

// A failure: an OAR status and its message.
struct Failure {
  oar_status_t code = OAR_STATUS_OK;
  std::string message;
  bool failed() const { return code != OAR_STATUS_OK; }
  [[noreturn]] void raise() const { throw sdk::Error(code, message); }
};

}  // namespace oar::hip

struct oar_device_s;

// One stream_add_host_callback: called exactly once, by the runtime's thread
// (hipStreamAddCallback) or, if the stream failed first, by the plugin with the
// failure.
struct HostCallback {
  oar_host_callback_fn fn = nullptr;
  void* user_data = nullptr;
  oar_stream_s* stream = nullptr;
  std::atomic<bool> claimed{false};
  std::atomic<bool> done{false};
};

struct oar_stream_s {
  oar_device_s* device = nullptr;
  hipStream_t stream = nullptr;
  // The index kernels' error word (operators.h, Launcher::error_word), and
  // whether one ran since the word was last read.
  void* error_word = nullptr;
  bool check_error_word = false;
  std::mutex mutex;  // guards failure and callbacks
  oar::hip::Failure failure;
  std::vector<std::unique_ptr<HostCallback>> callbacks;
};

struct oar_event_s {
  oar_device_s* device = nullptr;
  hipEvent_t event = nullptr;
  bool timing = false;
  bool recorded = false;
  oar::hip::Failure failure;  // of its stream's work before the record
};

struct oar_device_s {
  int32_t index = 0;  // OAR's index
  int ordinal = 0;    // the runtime's
  hipModule_t module = nullptr;
  std::map<std::string, hipFunction_t> functions;  // every kernel of the module
  std::mutex mutex;
  std::unordered_set<oar_stream_s*> streams;
  std::unordered_set<oar_event_s*> events;
};

namespace oar::hip {

class HipPlugin final : public cuda::Launcher {
 public:
  HipPlugin() {
    const std::string why = discover();
    if (!why.empty()) {
      sdk::log(OAR_LOG_LEVEL_WARNING, "hip: " + why + ". The plugin serves 0 devices.");
    }
  }

  ~HipPlugin() override {
    std::unordered_set<oar_device_s*> open;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open.swap(open_);
    }
    for (oar_device_s* device : open) release(device);
  }

  // --- operators (the cuda plugin's, plugins/cuda/operators.cc) ------------------

  void register_kernels(const oar_kernel_registrar_t* registrar) {
    sdk::require_not_null(registrar, "registrar");
    cuda::register_operators(sdk::KernelRegistrar(registrar), table_, this);
  }

  void check_tensor(const oar_kernel_call_t& call, const DLTensor& t,
                    const char* what) const override {
    sdk::AllocationTable::Allocation allocation;
    sdk::require(allocations_.find(t.data, &allocation) && allocation.device == call.device,
                 OAR_STATUS_INVALID_ARGUMENT,
                 std::string("hip: the ") + what + " tensor is not memory of the call's device");
    allocations_.check_tensor(t, what);
  }

  // One launch of |kernel| on the call's stream, its parameters packed in one
  // buffer (HIP_LAUNCH_PARAM_BUFFER_POINTER). A failure reported by the
  // launch itself throws; a fault of the kernel surfaces later as the
  // stream's failure.
  void launch(const oar_kernel_call_t& call, const char* kernel, uint32_t grid,
              const ArgPack& args) override {
    oar_device_s* device = call.device;
    oar_stream_s* stream = call.stream;
    require_device(device);
    sdk::require_not_null(stream, "stream");
    sdk::require(stream->device == device, OAR_STATUS_INVALID_ARGUMENT,
                 "hip: the call's stream belongs to another device");
    auto function = device->functions.find(kernel);
    sdk::require(function != device->functions.end(), OAR_STATUS_INTERNAL,
                 std::string("hip: kernel ") + kernel + " is not in the plugin's module");
    sdk::require(grid >= 1 && grid <= kMaxGrid, OAR_STATUS_INTERNAL,
                 std::string("hip: launch of ") + kernel + " with a grid out of range");
    raise_if_failed(stream);
    current(device);
    size_t size = args.size();
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(args.data()),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
    enqueue(stream,
            runtime_.hipModuleLaunchKernel(function->second, grid, 1, 1, kBlock, 1, 1, 0,
                                           stream->stream, nullptr, extra),
            "hipModuleLaunchKernel");
  }

  // No BLAS library (Debian 12 has no hipBLAS): matmul runs OAR's kernel.
  bool gemm(const oar_kernel_call_t&, const Gemm&) override { return false; }

  uint64_t error_word(const oar_kernel_call_t& call) override {
    oar_stream_s* stream = call.stream;
    sdk::require_not_null(stream, "stream");
    current(stream->device);
    if (stream->error_word == nullptr) {
      check(runtime_.hipMalloc(&stream->error_word, kErrorWordSize), "hipMalloc");
      enqueue(stream,
              runtime_.hipMemsetD8Async(stream->error_word, 0, kErrorWordSize, stream->stream),
              "hipMemsetD8Async");
    }
    stream->check_error_word = true;
    return uint64_t(reinterpret_cast<uintptr_t>(stream->error_word));
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
    device->ordinal = devices_[size_t(index)].ordinal;
    current(device.get());
    std::string what = "hipModuleLoadData";
    hipError_t result = runtime_.hipModuleLoadData(&device->module, cuda::kernel_image());
    for (size_t i = 0; result == hipSuccess && i < cuda::kernel_count(); ++i) {
      hipFunction_t function = nullptr;
      const char* name = cuda::kernel_names()[i];
      what = std::string("hipModuleGetFunction(") + name + ")";
      result = runtime_.hipModuleGetFunction(&function, device->module, name);
      if (result == hipSuccess) device->functions.emplace(name, function);
    }
    if (result != hipSuccess) {
      if (device->module != nullptr) (void)runtime_.hipModuleUnload(device->module);
      check(result, what.c_str());
    }
    std::lock_guard<std::mutex> lock(mutex_);
    open_.insert(device.get());
    *out_device = device.release();
  }

  void device_close(oar_device_t device) {
    if (device == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sdk::require(open_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "device_close: not an open hip device");
    }
    release(device);
  }

  void device_synchronize(oar_device_t device) {
    require_device(device);
    std::vector<oar_stream_s*> streams;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      streams.assign(device->streams.begin(), device->streams.end());
    }
    Failure first;
    for (oar_stream_s* stream : streams) {
      Failure failure = synchronize(stream);
      if (failure.failed() && !first.failed()) first = failure;
    }
    if (first.failed()) first.raise();
    current(device);
    check(runtime_.hipDeviceSynchronize(), "hipDeviceSynchronize");
  }

  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total) {
    require_device(device);
    sdk::require_not_null(out_free, "out_free");
    sdk::require_not_null(out_total, "out_total");
    current(device);
    size_t free_bytes = 0, total_bytes = 0;
    check(runtime_.hipMemGetInfo(&free_bytes, &total_bytes), "hipMemGetInfo");
    *out_free = free_bytes;
    *out_total = total_bytes;
  }

  // --- streams ------------------------------------------------------------------

  void stream_create(oar_device_t device, const oar_stream_desc_t* desc, oar_stream_t* out_stream) {
    require_device(device);
    sdk::check_stream_desc(desc);
    sdk::require_not_null(out_stream, "out_stream");
    current(device);
    auto stream = std::make_unique<oar_stream_s>();
    stream->device = device;
    check(runtime_.hipStreamCreateWithFlags(&stream->stream, hipStreamNonBlocking),
          "hipStreamCreateWithFlags");
    std::lock_guard<std::mutex> lock(device->mutex);
    device->streams.insert(stream.get());
    *out_stream = stream.release();
  }

  void stream_destroy(oar_stream_t stream) {
    if (stream == nullptr) return;
    oar_device_s* device = stream->device;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      sdk::require(device->streams.erase(stream) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "stream_destroy: not a stream of this plugin");
    }
    destroy_stream(stream);
  }

  void stream_synchronize(oar_stream_t stream) {
    sdk::require_not_null(stream, "stream");
    Failure failure = synchronize(stream);
    if (failure.failed()) failure.raise();
  }

  void stream_query(oar_stream_t stream, bool* out_idle) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(out_idle, "out_idle");
    raise_if_failed(stream);
    current(stream->device);
    hipError_t result = runtime_.hipStreamQuery(stream->stream);
    if (result == hipErrorNotReady) {
      *out_idle = false;
      return;
    }
    if (result != hipSuccess) fail(stream, result, "hipStreamQuery").raise();
    Failure failure = check_index_errors(stream);
    if (failure.failed()) failure.raise();
    *out_idle = true;
  }

  void stream_wait_event(oar_stream_t stream, oar_event_t event) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(event, "event");
    sdk::require(event->recorded, OAR_STATUS_FAILED_PRECONDITION,
                 "stream_wait_event: the event was never recorded");
    sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                 "stream_wait_event: the event belongs to another device");
    current(stream->device);
    enqueue(stream, runtime_.hipStreamWaitEvent(stream->stream, event->event, 0),
            "hipStreamWaitEvent");
  }

  void stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                void* user_data) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(callback, "callback");
    auto entry = std::make_unique<HostCallback>();
    entry->fn = callback;
    entry->user_data = user_data;
    entry->stream = stream;
    HostCallback* raw = entry.get();
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      // Forget the callbacks that have run (their trampolines have returned).
      auto& list = stream->callbacks;
      list.erase(
          std::remove_if(list.begin(), list.end(),
                         [](const std::unique_ptr<HostCallback>& c) { return c->done.load(); }),
          list.end());
      // The runtime runs nothing more on a failed stream: call it now, after
      // the lock, with the failure.
      if (stream->failure.failed()) raw->claimed = true;
      list.push_back(std::move(entry));
    }
    if (raw->claimed) {
      run_callback(raw, failure_of(stream).code);
      return;
    }
    current(stream->device);
    hipError_t result =
        runtime_.hipStreamAddCallback(stream->stream, &HipPlugin::trampoline, raw, 0);
    if (result != hipSuccess) {
      raw->claimed = true;
      raw->done = true;
      enqueue(stream, result, "hipStreamAddCallback");
    }
  }

  // --- events -------------------------------------------------------------------

  void event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
    require_device(device);
    sdk::check_event_flags(flags, true);
    sdk::require_not_null(out_event, "out_event");
    current(device);
    auto event = std::make_unique<oar_event_s>();
    event->device = device;
    event->timing = (flags & OAR_EVENT_FLAG_TIMING) != 0;
    check(runtime_.hipEventCreateWithFlags(&event->event,
                                           event->timing ? hipEventDefault : hipEventDisableTiming),
          "hipEventCreateWithFlags");
    std::lock_guard<std::mutex> lock(device->mutex);
    device->events.insert(event.get());
    *out_event = event.release();
  }

  void event_destroy(oar_event_t event) {
    if (event == nullptr) return;
    oar_device_s* device = event->device;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      sdk::require(device->events.erase(event) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "event_destroy: not an event of this plugin");
    }
    current(device);
    (void)runtime_.hipEventDestroy(event->event);
    delete event;
  }

  void event_record(oar_event_t event, oar_stream_t stream) {
    sdk::require_not_null(event, "event");
    sdk::require_not_null(stream, "stream");
    sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                 "event_record: the event and the stream belong to different devices");
    current(stream->device);
    event->failure = failure_of(stream);
    event->recorded = true;
    if (event->failure.failed()) return;
    hipError_t result = runtime_.hipEventRecord(event->event, stream->stream);
    if (result != hipSuccess) {
      event->failure = fail(stream, result, "hipEventRecord");
      event->failure.raise();
    }
  }

  void event_query(oar_event_t event, bool* out_done) {
    sdk::require_not_null(event, "event");
    sdk::require_not_null(out_done, "out_done");
    if (!event->recorded) {
      *out_done = true;
      return;
    }
    if (event->failure.failed()) event->failure.raise();
    current(event->device);
    hipError_t result = runtime_.hipEventQuery(event->event);
    if (result == hipErrorNotReady) {
      *out_done = false;
      return;
    }
    if (result != hipSuccess) {
      event->failure = failure("hipEventQuery", result);
      event->failure.raise();
    }
    *out_done = true;
  }

  void event_synchronize(oar_event_t event) {
    sdk::require_not_null(event, "event");
    if (!event->recorded) return;
    if (event->failure.failed()) event->failure.raise();
    current(event->device);
    hipError_t result = runtime_.hipEventSynchronize(event->event);
    if (result != hipSuccess) {
      event->failure = failure("hipEventSynchronize", result);
      event->failure.raise();
    }
  }

  void event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
    sdk::require_not_null(start, "start");
    sdk::require_not_null(end, "end");
    sdk::require_not_null(out_ms, "out_ms");
    for (oar_event_t event : {start, end}) {
      sdk::require(event->timing, OAR_STATUS_FAILED_PRECONDITION,
                   "event_elapsed_ms: an event was not created with OAR_EVENT_FLAG_TIMING");
      sdk::require(event->recorded, OAR_STATUS_FAILED_PRECONDITION,
                   "event_elapsed_ms: an event was never recorded");
      if (event->failure.failed()) event->failure.raise();
    }
    sdk::require(start->device == end->device, OAR_STATUS_INVALID_ARGUMENT,
                 "event_elapsed_ms: the events belong to different devices");
    current(start->device);
    float ms = 0.0f;
    hipError_t result = runtime_.hipEventElapsedTime(&ms, start->event, end->event);
    sdk::require(result != hipErrorNotReady, OAR_STATUS_FAILED_PRECONDITION,
                 "event_elapsed_ms: an event is not complete");
    check(result, "hipEventElapsedTime");
    *out_ms = ms;
  }

  // --- memory -------------------------------------------------------------------

  void memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                       oar_memory_t* out_memory) {
    require_device(device);
    sdk::require_not_null(out_memory, "out_memory");
    const oar_device_properties_t& p = devices_[size_t(device->index)].properties;
    sdk::require(kind == OAR_MEMORY_KIND_DEVICE || kind == OAR_MEMORY_KIND_HOST_PINNED,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_allocate: kind " + std::to_string(kind) +
                     " is not one the device lists (DEVICE, HOST_PINNED)");
    sdk::require(size <= p.max_allocation_size, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_allocate: " + std::to_string(size) + " bytes exceed max_allocation_size " +
                     std::to_string(p.max_allocation_size));
    current(device);
    const size_t bytes = size == 0 ? 1 : size_t(size);  // a zero-size handle is still unique
    void* address = nullptr;
    if (kind == OAR_MEMORY_KIND_DEVICE) {
      check(runtime_.hipMalloc(&address, bytes), "hipMalloc");
    } else {
      check(runtime_.hipHostMalloc(&address, bytes, hipHostMallocPortable), "hipHostMalloc");
    }
    allocations_.insert(address, {size, kind, device});
    *out_memory = static_cast<oar_memory_t>(address);
  }

  void memory_free(oar_device_t device, oar_memory_t memory) {
    if (memory == nullptr) return;
    require_device(device);
    sdk::AllocationTable::Allocation allocation = allocations_.erase(memory, device);
    current(device);
    check(free_memory(memory, allocation.kind), "memory_free");
  }

  void memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address) {
    require_device(device);
    sdk::require_not_null(out_address, "out_address");
    sdk::AllocationTable::Allocation allocation;
    sdk::require(allocations_.find(memory, &allocation) && allocation.device == device,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_host_address: not an allocation of this device");
    sdk::require(allocation.kind == OAR_MEMORY_KIND_HOST_PINNED, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_host_address: the allocation is device memory, not host-visible");
    *out_address = memory;
  }

  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_h2d destination");
    if (size == 0) return;
    sdk::require_not_null(src, "memory_copy_h2d source");
    raise_if_failed(stream);
    current(stream->device);
    enqueue(stream,
            runtime_.hipMemcpyHtoDAsync(address(dst, dst_offset), const_cast<void*>(src),
                                        size_t(size), stream->stream),
            "hipMemcpyHtoDAsync");
  }

  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2h source");
    if (size == 0) return;
    sdk::require_not_null(dst, "memory_copy_d2h destination");
    raise_if_failed(stream);
    current(stream->device);
    enqueue(
        stream,
        runtime_.hipMemcpyDtoHAsync(dst, address(src, src_offset), size_t(size), stream->stream),
        "hipMemcpyDtoHAsync");
  }

  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_d2d destination");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2d source");
    const uintptr_t to = uintptr_t(address(dst, dst_offset));
    const uintptr_t from = uintptr_t(address(src, src_offset));
    if (size == 0 || to == from) return;  // identical ranges: nothing to move
    sdk::require(to + size <= from || from + size <= to, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_copy_d2d: source and destination ranges partly overlap");
    raise_if_failed(stream);
    current(stream->device);
    enqueue(stream,
            runtime_.hipMemcpyDtoDAsync(address(dst, dst_offset), address(src, src_offset),
                                        size_t(size), stream->stream),
            "hipMemcpyDtoDAsync");
  }

  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_fill destination");
    if (size == 0) return;
    raise_if_failed(stream);
    current(stream->device);
    enqueue(
        stream,
        runtime_.hipMemsetD8Async(address(dst, dst_offset), value, size_t(size), stream->stream),
        "hipMemsetD8Async");
  }

 private:
  struct DeviceInfo {
    int ordinal = 0;
    oar_device_properties_t properties{};
  };

  // Loads the runtime and lists the devices; returns why there are none.
  std::string discover() {
    if (!runtime_.available()) return runtime_.why();
    hipError_t result = runtime_.hipInit(0);
    if (result == hipErrorNoDevice) return "no device (hipInit: hipErrorNoDevice)";
    if (result != hipSuccess) {
      // ROCm reaches AMD GPUs through the amdgpu kernel driver's /dev/kfd.
      return "hipInit failed: " + runtime_.error_name(result) +
             (access("/dev/kfd", F_OK) != 0 ? " (/dev/kfd is absent: no AMD GPU kernel driver)"
                                            : "");
    }
    int count = 0;
    result = runtime_.hipGetDeviceCount(&count);
    if (result == hipErrorNoDevice || (result == hipSuccess && count == 0)) {
      return "no device (hipGetDeviceCount: " + std::to_string(count) + ")";
    }
    if (result != hipSuccess) return "hipGetDeviceCount failed: " + runtime_.error_name(result);
    int version = 0;
    (void)runtime_.hipRuntimeGetVersion(&version);  // major * 10^7 + minor * 10^5 + patch
    const std::string runtime_version = "HIP runtime " + std::to_string(version / 10000000) + "." +
                                        std::to_string(version / 100000 % 100);
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      std::string problem = describe(i, runtime_version, &info);
      if (problem.empty()) {
        devices_.push_back(info);
      } else {
        sdk::log(OAR_LOG_LEVEL_WARNING,
                 "hip: device " + std::to_string(i) + " skipped: " + problem);
      }
    }
    if (devices_.empty()) return "no usable device (" + std::to_string(count) + " skipped)";
    return "";
  }

  std::string describe(int ordinal, const std::string& runtime_version, DeviceInfo* info) {
    hipDeviceProp_t props;
    std::memset(&props, 0, sizeof props);
    hipError_t result = runtime_.hipGetDeviceProperties(&props, ordinal);
    if (result != hipSuccess) return "hipGetDeviceProperties: " + runtime_.error_name(result);
    props.name[sizeof props.name - 1] = '\0';
    props.gcnArchName[sizeof props.gcnArchName - 1] = '\0';
    // "gfx90a:sramecc+:xnack-": the processor, then its features. The code
    // objects are built for the processor with any features.
    std::string arch = props.gcnArchName;
    arch = arch.substr(0, arch.find(':'));
    const std::vector<std::string> built = targets();
    if (std::find(built.begin(), built.end(), arch) == built.end()) {
      std::string list;
      for (const auto& t : built) list += (list.empty() ? "" : ", ") + t;
      return std::string(props.name) + " is " + (arch.empty() ? "an unnamed target" : arch) +
             ", which the plugin's code objects were not built for (" + list +
             "; -DOAR_HIP_ARCHITECTURES)";
    }
    info->ordinal = ordinal;
    oar_device_properties_t& p = info->properties;
    p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    sdk::copy_text(p.name, props.name);
    sdk::copy_text(p.vendor, "AMD");
    sdk::copy_text(p.driver_version, runtime_version + ", " + props.gcnArchName);
    p.kind = OAR_DEVICE_KIND_GPU;
    p.dlpack_device_type = kDLROCM;
    p.total_memory = props.totalGlobalMem;
    p.max_allocation_size = props.totalGlobalMem;
    p.min_alignment = kAlignment;
    p.memory_kinds = OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED;
    // The kernels compute f16 and bf16 in f32 on every target; f64 is in
    // every GCN/CDNA/RDNA part.
    p.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64;
    p.native_dtypes = native_dtypes(arch);
    p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
                 OAR_DEVICE_FEATURE_HOST_CALLBACKS;
    p.compute_units = uint32_t(std::max(props.multiProcessorCount, 0));
    return "";
  }

  void require_index(int32_t index) const {
    sdk::require(index >= 0 && size_t(index) < devices_.size(), OAR_STATUS_OUT_OF_RANGE,
                 "device index " + std::to_string(index) + " is out of range (" +
                     std::to_string(devices_.size()) + " device(s))");
  }

  static void require_device(oar_device_t device) { sdk::require_not_null(device, "device"); }

  static hipDeviceptr_t address(oar_memory_t memory, uint64_t offset) {
    return static_cast<char*>(static_cast<void*>(memory)) + offset;
  }

  Failure failure(const char* call, hipError_t result) const {
    return {status_of(result),
            std::string("hip: ") + call + " failed: " + runtime_.error_text(result)};
  }

  void check(hipError_t result, const char* call) const {
    if (result != hipSuccess) failure(call, result).raise();
  }

  void current(oar_device_s* device) const {
    check(runtime_.hipSetDevice(device->ordinal), "hipSetDevice");
  }

  // The result of enqueuing work: a sticky error (a fault of earlier
  // asynchronous work) fails the stream; any error throws.
  void enqueue(oar_stream_s* stream, hipError_t result, const char* call) {
    if (result == hipSuccess) return;
    if (is_sticky(result)) fail(stream, result, call).raise();
    failure(call, result).raise();
  }

  static Failure failure_of(oar_stream_s* stream) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    return stream->failure;
  }

  static void raise_if_failed(oar_stream_s* stream) {
    Failure failure = failure_of(stream);
    if (failure.failed()) failure.raise();
  }

  // Puts |stream| into the failed state (the first failure stays) and calls,
  // with the failure, the host callbacks the runtime will not run any more.
  Failure fail(oar_stream_s* stream, hipError_t result, const char* call) {
    std::vector<HostCallback*> orphans;
    Failure failed;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      if (!stream->failure.failed()) stream->failure = failure(call, result);
      failed = stream->failure;
      if (is_sticky(result)) {
        for (auto& c : stream->callbacks) {
          if (!c->claimed.exchange(true)) orphans.push_back(c.get());
        }
      }
    }
    for (HostCallback* c : orphans) run_callback(c, failed.code);
    return failed;
  }

  // Waits for |stream|'s work; returns its failure (the stream's state).
  Failure synchronize(oar_stream_s* stream) {
    Failure failure = failure_of(stream);
    if (failure.failed()) return failure;
    current(stream->device);
    hipError_t result = runtime_.hipStreamSynchronize(stream->stream);
    if (result != hipSuccess) return fail(stream, result, "hipStreamSynchronize");
    return check_index_errors(stream);
  }

  // After the stream's work is done: an index out of range an index kernel
  // recorded fails the stream with OUT_OF_RANGE, naming the operator, the
  // index and the bound (docs/ops.md, Errors).
  Failure check_index_errors(oar_stream_s* stream) {
    if (!stream->check_error_word) return {};
    stream->check_error_word = false;
    struct {
      uint32_t flag;
      int32_t op;
      int64_t index;
      int64_t bound;
    } word{};
    static_assert(sizeof word == kErrorWordSize, "kernels.cu's ErrorWord");
    hipError_t result =
        runtime_.hipMemcpyDtoHAsync(&word, stream->error_word, sizeof word, stream->stream);
    if (result == hipSuccess) result = runtime_.hipStreamSynchronize(stream->stream);
    if (result != hipSuccess) return fail(stream, result, "reading the index error word");
    if (word.flag == 0) return {};
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (!stream->failure.failed()) {
      stream->failure = {OAR_STATUS_OUT_OF_RANGE,
                         std::string(word.op == 2 ? "gather" : "index_select") + ": index " +
                             std::to_string(word.index) + " out of range [0, " +
                             std::to_string(word.bound) + ")"};
    }
    return stream->failure;
  }

  static void run_callback(HostCallback* c, oar_status_t status) {
    c->fn(c->user_data, status);
    c->done = true;
  }

  // hipStreamAddCallback's function: the runtime calls it on its own thread
  // once the stream's earlier work completed (|status| their error, if any).
  // (Debian's libamdhip64.so.5 5.2 does not export hipLaunchHostFunc.)
  static void trampoline(hipStream_t, hipError_t status, void* user_data) {
    auto* c = static_cast<HostCallback*>(user_data);
    if (c->claimed.exchange(true)) return;  // the plugin called it with a failure
    const oar_status_t failed = failure_of(c->stream).code;
    run_callback(c, failed != OAR_STATUS_OK ? failed : status_of(status));
  }

  hipError_t free_memory(oar_memory_t memory, uint32_t kind) const {
    return kind == OAR_MEMORY_KIND_DEVICE ? runtime_.hipFree(memory) : runtime_.hipHostFree(memory);
  }

  // Synchronizes, settles the callbacks and destroys |stream| (already
  // removed from its device). A pending asynchronous error is dropped.
  void destroy_stream(oar_stream_s* stream) {
    std::unique_ptr<oar_stream_s> owned(stream);
    (void)synchronize(stream);
    std::vector<HostCallback*> orphans;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      for (auto& c : stream->callbacks) {
        if (!c->claimed.exchange(true)) orphans.push_back(c.get());
      }
    }
    const oar_status_t status =
        stream->failure.failed() ? stream->failure.code : OAR_STATUS_CANCELLED;
    for (HostCallback* c : orphans) run_callback(c, status);
    if (runtime_.hipSetDevice(stream->device->ordinal) == hipSuccess) {
      if (stream->error_word != nullptr) (void)runtime_.hipFree(stream->error_word);
      (void)runtime_.hipStreamDestroy(stream->stream);
    }
  }

  // Shutdown order: streams, events, memory, module.
  void release(oar_device_s* device) {
    std::unordered_set<oar_stream_s*> streams;
    std::unordered_set<oar_event_s*> events;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      streams.swap(device->streams);
      events.swap(device->events);
    }
    for (oar_stream_s* stream : streams) destroy_stream(stream);
    const bool usable = runtime_.hipSetDevice(device->ordinal) == hipSuccess;
    for (oar_event_s* event : events) {
      if (usable) (void)runtime_.hipEventDestroy(event->event);
      delete event;
    }
    size_t leaked = 0;
    for (auto& [memory, allocation] : allocations_.take_all(device)) {
      if (usable) (void)free_memory(static_cast<oar_memory_t>(memory), allocation.kind);
      ++leaked;
    }
    if (!streams.empty() || !events.empty() || leaked != 0) {
      sdk::log(OAR_LOG_LEVEL_WARNING,
               "hip: device " + std::to_string(device->index) + " closed with " +
                   std::to_string(streams.size()) + " stream(s), " + std::to_string(events.size()) +
                   " event(s) and " + std::to_string(leaked) + " allocation(s) still open");
    }
    if (usable && device->module != nullptr) (void)runtime_.hipModuleUnload(device->module);
    delete device;
  }

  Runtime runtime_;  // first member: unloaded last
  std::vector<DeviceInfo> devices_;
  std::mutex mutex_;
  std::unordered_set<oar_device_s*> open_;
  sdk::AllocationTable allocations_{"hip", sdk::AllocationTable::Unknown::kRefuse};
  sdk::KernelTable table_;  // the registered operators (called until finalize)
};

}  // namespace oar::hip

OAR_PLUGIN_DEFINE(oar::hip::HipPlugin, OAR_PLUGIN_NAME, "0.1.0", "OAR project")
