// Streams, events, host callbacks and memory for the plugins that drive a
// CUDA-like runtime: plugins/cuda (the CUDA driver API) and plugins/hip (the
// HIP runtime). Both runtimes have the same model: in-order streams, events
// with optional timing, host functions run by the runtime's thread, "sticky"
// errors of asynchronous work, and device or pinned host allocations that are
// plain addresses. This file maps that model onto OAR's once.
//
// A plugin describes its runtime with an Api struct (types, constants and the
// calls, each a thin wrapper that returns the runtime's result):
//
//   struct Api {
//     using Result, Stream, Event, DevicePtr;
//     static constexpr Result kSuccess, kNotReady;
//     static constexpr const char* kPlugin;      // "cuda": prefixes messages
//     static constexpr const char* kStreamCreate, ...;  // the calls' names
//     static oar_status_t status_of(Result);
//     static bool is_sticky(Result);   // an error of asynchronous work
//     std::string error_text(Result) const;
//     static DevicePtr address(oar_memory_t, uint64_t offset);
//     Result make_current(const oar_device_s*) const;
//     Result device_synchronize, mem_get_info, stream_create, stream_destroy,
//       stream_query, stream_synchronize, stream_wait_event, add_host_callback,
//       event_create, event_destroy, event_record, event_query,
//       event_synchronize, event_elapsed, alloc_device, alloc_host, free,
//       free_host, copy_to_device, copy_to_host, copy_on_device, fill,
//       launch (...) const;  // see plugins/cuda/plugin.cc's DriverApi
//   };
//
// and derives from GpuStreams<Plugin, Api> (it gives GpuStreams its Api with a
// member `Api gpu_api() const`, and each device's properties with
// `const oar_device_properties_t& properties(const oar_device_s*) const`).
// Its handle types are
//   struct oar_stream_s : gpu::StreamState<Api> {};
//   struct oar_event_s : gpu::EventState<Api> {};
// and its oar_device_s has `index`, `functions` (a kernel's name to its
// function), `std::mutex mutex` and the sets `streams`
// and `events`. Memory handles are the allocations' addresses (allocations_
// records them). The runtime's host function calls GpuStreams::on_host_callback.
//
// Work whose failure the runtime does not report (cuda: an NCCL collective
// whose peer died never completes; NCCL says so through its own call) is
// watched by the plugin through three hooks, which GpuStreams calls and which
// do nothing unless the plugin defines them:
//   Failure watch_stream(Stream*, bool wait);  // before a wait (wait: true),
//       or after a query found the stream busy (wait: false): a failure
//       found fails the stream
//   void event_recorded(Event*, Stream*);      // after a successful record
//   Failure watch_event(Event*);               // before an event's wait
//
// Errors: a failed runtime call throws with the result's name. An error of
// asynchronous work fails the stream that reported it, as OAR's stream model
// says: stream_synchronize / stream_query return it from then on, events
// recorded afterwards carry it, and host callbacks that the runtime will no
// longer run are called with it.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"
#include "oar/sdk/plugin.hpp"

struct oar_device_s;
struct oar_stream_s;
struct oar_event_s;

namespace oar::gpu {

// The size of the index kernels' error word (kernels.cu's ErrorWord).
constexpr size_t kErrorWordSize = 24;

// A failure: an OAR status and its message.
struct Failure {
  oar_status_t code = OAR_STATUS_OK;
  std::string message;
  bool failed() const { return code != OAR_STATUS_OK; }
  [[noreturn]] void raise() const { throw sdk::Error(code, message); }
};

// One stream_add_host_callback: called exactly once, by the runtime's thread
// or, if the stream failed first, by the plugin with the failure.
struct HostCallback {
  oar_host_callback_fn fn = nullptr;
  void* user_data = nullptr;
  oar_stream_s* stream = nullptr;
  std::atomic<bool> claimed{false};
  std::atomic<bool> done{false};
};

template <class Api>
struct StreamState {
  oar_device_s* device = nullptr;
  typename Api::Stream stream{};
  // The index kernels' error word (operators.h, Launcher::error_word), and
  // whether one ran since the word was last read.
  typename Api::DevicePtr error_word{};
  bool check_error_word = false;
  std::mutex mutex;  // guards failure and callbacks
  Failure failure;
  std::vector<std::unique_ptr<HostCallback>> callbacks;
};

template <class Api>
struct EventState {
  oar_device_s* device = nullptr;
  typename Api::Event event{};
  bool timing = false;
  bool recorded = false;
  Failure failure;  // of its stream's work before the record
};

// The handle types a plugin defines, named through its class so that
// GpuStreams reads them only once they are complete.
template <class Plugin>
struct Handles {
  using Device = oar_device_s;
  using Stream = oar_stream_s;
  using Event = oar_event_s;
};

template <class Plugin, class Api>
class GpuStreams {
 public:
  using Result = typename Api::Result;
  // The plugin's handle types (dependent names: complete when used).
  using Device = typename Handles<Plugin>::Device;
  using Stream = typename Handles<Plugin>::Stream;
  using Event = typename Handles<Plugin>::Event;

  // --- devices ------------------------------------------------------------------

  void device_close(Device* device) {
    if (device == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(open_mutex_);
      sdk::require(open_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   std::string("device_close: not an open ") + Api::kPlugin + " device");
    }
    static_cast<Plugin*>(this)->release(device);
  }

  void device_synchronize(Device* device) {
    sdk::require_not_null(device, "device");
    std::vector<Stream*> streams;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      streams.assign(device->streams.begin(), device->streams.end());
    }
    Failure first;
    for (Stream* stream : streams) {
      Failure failure = synchronize(stream);
      if (failure.failed() && !first.failed()) first = failure;
    }
    if (first.failed()) first.raise();
    current(device);
    check(api().device_synchronize(), Api::kDeviceSynchronize);
  }

  // --- streams ------------------------------------------------------------------

  void stream_create(Device* device, const oar_stream_desc_t* desc, Stream** out_stream) {
    sdk::require_not_null(device, "device");
    sdk::check_stream_desc(desc);
    sdk::require_not_null(out_stream, "out_stream");
    current(device);
    auto stream = std::make_unique<Stream>();
    stream->device = device;
    check(api().stream_create(&stream->stream), Api::kStreamCreate);
    std::lock_guard<std::mutex> lock(device->mutex);
    device->streams.insert(stream.get());
    *out_stream = stream.release();
  }

  void stream_destroy(Stream* stream) {
    if (stream == nullptr) return;
    Device* device = stream->device;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      sdk::require(device->streams.erase(stream) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "stream_destroy: not a stream of this plugin");
    }
    destroy_stream(stream);
  }

  void stream_synchronize(Stream* stream) {
    sdk::require_not_null(stream, "stream");
    Failure failure = synchronize(stream);
    if (failure.failed()) failure.raise();
  }

  void stream_query(Stream* stream, bool* out_idle) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(out_idle, "out_idle");
    raise_if_failed(stream);
    current(stream->device);
    Result result = api().stream_query(stream->stream);
    if (result == Api::kNotReady) {
      Failure failure = plugin().watch_stream(stream, false);
      if (failure.failed()) fail(stream, failure).raise();
      *out_idle = false;
      return;
    }
    if (result != Api::kSuccess) fail(stream, result, Api::kStreamQuery).raise();
    Failure failure = check_index_errors(stream);
    if (failure.failed()) failure.raise();
    *out_idle = true;
  }

  void stream_wait_event(Stream* stream, Event* event) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(event, "event");
    sdk::require(event->recorded, OAR_STATUS_FAILED_PRECONDITION,
                 "stream_wait_event: the event was never recorded");
    sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                 "stream_wait_event: the event belongs to another device");
    current(stream->device);
    enqueue(stream, api().stream_wait_event(stream->stream, event->event), Api::kStreamWaitEvent);
  }

  void stream_add_host_callback(Stream* stream, oar_host_callback_fn callback, void* user_data) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(callback, "callback");
    auto entry = std::make_unique<HostCallback>();
    entry->fn = callback;
    entry->user_data = user_data;
    entry->stream = stream;
    HostCallback* raw = entry.get();
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      // Forget the callbacks that have run (their host functions have returned).
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
    Result result = api().add_host_callback(stream->stream, raw);
    if (result != Api::kSuccess) {
      raw->claimed = true;
      raw->done = true;
      enqueue(stream, result, Api::kAddHostCallback);
    }
  }

  // The runtime's host function for |c|, run once the stream's earlier work
  // completed (|status|: the error of that work the runtime reports, if any).
  static void on_host_callback(HostCallback* c, oar_status_t status) {
    if (c->claimed.exchange(true)) return;  // the plugin called it with a failure
    const oar_status_t failed = failure_of(c->stream).code;
    run_callback(c, failed != OAR_STATUS_OK ? failed : status);
  }

  // --- events -------------------------------------------------------------------

  void event_create(Device* device, uint32_t flags, Event** out_event) {
    sdk::require_not_null(device, "device");
    sdk::check_event_flags(flags, true);
    sdk::require_not_null(out_event, "out_event");
    current(device);
    auto event = std::make_unique<Event>();
    event->device = device;
    event->timing = (flags & OAR_EVENT_FLAG_TIMING) != 0;
    check(api().event_create(&event->event, event->timing), Api::kEventCreate);
    std::lock_guard<std::mutex> lock(device->mutex);
    device->events.insert(event.get());
    *out_event = event.release();
  }

  void event_destroy(Event* event) {
    if (event == nullptr) return;
    Device* device = event->device;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      sdk::require(device->events.erase(event) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "event_destroy: not an event of this plugin");
    }
    current(device);
    (void)api().event_destroy(event->event);
    delete event;
  }

  void event_record(Event* event, Stream* stream) {
    sdk::require_not_null(event, "event");
    sdk::require_not_null(stream, "stream");
    sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                 "event_record: the event and the stream belong to different devices");
    current(stream->device);
    event->failure = failure_of(stream);
    event->recorded = true;
    if (event->failure.failed()) return;
    Result result = api().event_record(event->event, stream->stream);
    if (result != Api::kSuccess) {
      event->failure = fail(stream, result, Api::kEventRecord);
      event->failure.raise();
    }
    plugin().event_recorded(event, stream);
  }

  void event_query(Event* event, bool* out_done) {
    sdk::require_not_null(event, "event");
    sdk::require_not_null(out_done, "out_done");
    if (!event->recorded) {
      *out_done = true;
      return;
    }
    if (event->failure.failed()) event->failure.raise();
    current(event->device);
    Result result = api().event_query(event->event);
    if (result == Api::kNotReady) {
      *out_done = false;
      return;
    }
    if (result != Api::kSuccess) {
      event->failure = failure(Api::kEventQuery, result);
      event->failure.raise();
    }
    *out_done = true;
  }

  void event_synchronize(Event* event) {
    sdk::require_not_null(event, "event");
    if (!event->recorded) return;
    if (event->failure.failed()) event->failure.raise();
    current(event->device);
    Failure watched = plugin().watch_event(event);
    if (watched.failed()) {
      event->failure = watched;
      event->failure.raise();
    }
    Result result = api().event_synchronize(event->event);
    if (result != Api::kSuccess) {
      event->failure = failure(Api::kEventSynchronize, result);
      event->failure.raise();
    }
  }

  void event_elapsed_ms(Event* start, Event* end, float* out_ms) {
    sdk::require_not_null(start, "start");
    sdk::require_not_null(end, "end");
    sdk::require_not_null(out_ms, "out_ms");
    for (Event* event : {start, end}) {
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
    Result result = api().event_elapsed(&ms, start->event, end->event);
    sdk::require(result != Api::kNotReady, OAR_STATUS_FAILED_PRECONDITION,
                 "event_elapsed_ms: an event is not complete");
    check(result, Api::kEventElapsed);
    *out_ms = ms;
  }

  // --- memory -------------------------------------------------------------------

  void device_memory_info(Device* device, uint64_t* out_free, uint64_t* out_total) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_free, "out_free");
    sdk::require_not_null(out_total, "out_total");
    current(device);
    size_t free_bytes = 0, total_bytes = 0;
    check(api().mem_get_info(&free_bytes, &total_bytes), Api::kMemGetInfo);
    *out_free = free_bytes;
    *out_total = total_bytes;
  }

  void memory_allocate(Device* device, uint64_t size, uint32_t kind, oar_memory_t* out_memory) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_memory, "out_memory");
    const oar_device_properties_t& p = static_cast<const Plugin*>(this)->properties(device);
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
      check(api().alloc_device(&address, bytes), Api::kAllocDevice);
    } else {
      check(api().alloc_host(&address, bytes), Api::kAllocHost);
    }
    allocations_.insert(address, {size, kind, device});
    *out_memory = static_cast<oar_memory_t>(address);
  }

  void memory_free(Device* device, oar_memory_t memory) {
    if (memory == nullptr) return;
    sdk::require_not_null(device, "device");
    sdk::AllocationTable::Allocation allocation = allocations_.erase(memory, device);
    current(device);
    check(free_memory(memory, allocation.kind), "memory_free");
  }

  void memory_host_address(Device* device, oar_memory_t memory, void** out_address) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_address, "out_address");
    sdk::AllocationTable::Allocation allocation;
    sdk::require(allocations_.find(memory, &allocation) && allocation.device == device,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_host_address: not an allocation of this device");
    sdk::require(allocation.kind == OAR_MEMORY_KIND_HOST_PINNED, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_host_address: the allocation is device memory, not host-visible");
    *out_address = memory;
  }

  void memory_copy_h2d(Stream* stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_h2d destination");
    if (size == 0) return;
    sdk::require_not_null(src, "memory_copy_h2d source");
    raise_if_failed(stream);
    current(stream->device);
    enqueue(stream,
            api().copy_to_device(Api::address(dst, dst_offset), src, size_t(size), stream->stream),
            Api::kCopyToDevice);
  }

  void memory_copy_d2h(Stream* stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2h source");
    if (size == 0) return;
    sdk::require_not_null(dst, "memory_copy_d2h destination");
    raise_if_failed(stream);
    current(stream->device);
    enqueue(stream,
            api().copy_to_host(dst, Api::address(src, src_offset), size_t(size), stream->stream),
            Api::kCopyToHost);
  }

  void memory_copy_d2d(Stream* stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_d2d destination");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2d source");
    const auto to = Api::address(dst, dst_offset);
    const auto from = Api::address(src, src_offset);
    const uintptr_t to_address = uintptr_t(to), from_address = uintptr_t(from);
    if (size == 0 || to_address == from_address) return;  // identical ranges: nothing to move
    sdk::require(to_address + size <= from_address || from_address + size <= to_address,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_copy_d2d: source and destination ranges partly overlap");
    raise_if_failed(stream);
    current(stream->device);
    enqueue(stream, api().copy_on_device(to, from, size_t(size), stream->stream),
            Api::kCopyOnDevice);
  }

  void memory_fill(Stream* stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_fill destination");
    if (size == 0) return;
    raise_if_failed(stream);
    current(stream->device);
    enqueue(stream, api().fill(Api::address(dst, dst_offset), value, size_t(size), stream->stream),
            Api::kFill);
  }

 protected:
  // device_open's last step: |device| is open until device_close, or until
  // the plugin's destructor calls close_all.
  Device* add_open(std::unique_ptr<Device> device) {
    std::lock_guard<std::mutex> lock(open_mutex_);
    open_.insert(device.get());
    return device.release();
  }

  // Releases the devices a host left open (the plugin's destructor, while
  // the runtime is still loaded).
  void close_all() {
    std::unordered_set<Device*> open;
    {
      std::lock_guard<std::mutex> lock(open_mutex_);
      open.swap(open_);
    }
    for (Device* device : open) static_cast<Plugin*>(this)->release(device);
  }

  // What device_close does first: the streams (synchronized, pending
  // callbacks settled, destroyed), the events, then the allocations, with a
  // warning if the host left any of them open. Returns whether the device
  // could be made current (and so its module can be unloaded).
  bool close_handles(Device* device) {
    std::unordered_set<Stream*> streams;
    std::unordered_set<Event*> events;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      streams.swap(device->streams);
      events.swap(device->events);
    }
    for (Stream* stream : streams) destroy_stream(stream);
    const bool usable = api().make_current(device) == Api::kSuccess;
    for (Event* event : events) {
      if (usable) (void)api().event_destroy(event->event);
      delete event;
    }
    size_t leaked = 0;
    for (auto& [memory, allocation] : allocations_.take_all(device)) {
      if (usable) (void)free_memory(static_cast<oar_memory_t>(memory), allocation.kind);
      ++leaked;
    }
    if (!streams.empty() || !events.empty() || leaked != 0) {
      sdk::log(OAR_LOG_LEVEL_WARNING, std::string(Api::kPlugin) + ": device " +
                                          std::to_string(device->index) + " closed with " +
                                          std::to_string(streams.size()) + " stream(s), " +
                                          std::to_string(events.size()) + " event(s) and " +
                                          std::to_string(leaked) + " allocation(s) still open");
    }
    return usable;
  }

  // Launcher::check_tensor: |t| lies inside an allocation of the call's device.
  void check_call_tensor(const oar_kernel_call_t& call, const DLTensor& t, const char* what) const {
    sdk::AllocationTable::Allocation allocation;
    sdk::require(
        allocations_.find(t.data, &allocation) && allocation.device == call.device,
        OAR_STATUS_INVALID_ARGUMENT,
        std::string(Api::kPlugin) + ": the " + what + " tensor is not memory of the call's device");
    allocations_.check_tensor(t, what);
  }

  // Launcher::launch: |kernel| (one of device->functions, the kernels of the
  // device's module) on the call's stream, |grid| blocks of |block| threads,
  // its parameters packed in one buffer. A failure reported by the launch
  // itself throws; a fault of the kernel surfaces later as the stream's
  // failure (the sticky error, at synchronize or query).
  void launch_kernel(const oar_kernel_call_t& call, const char* kernel, uint32_t grid,
                     uint32_t max_grid, uint32_t block, const void* params, size_t size) {
    Device* device = call.device;
    Stream* stream = call.stream;
    sdk::require_not_null(device, "device");
    sdk::require_not_null(stream, "stream");
    sdk::require(stream->device == device, OAR_STATUS_INVALID_ARGUMENT,
                 std::string(Api::kPlugin) + ": the call's stream belongs to another device");
    auto function = device->functions.find(kernel);
    sdk::require(
        function != device->functions.end(), OAR_STATUS_INTERNAL,
        std::string(Api::kPlugin) + ": kernel " + kernel + " is not in the plugin's module");
    sdk::require(grid >= 1 && grid <= max_grid, OAR_STATUS_INTERNAL,
                 std::string(Api::kPlugin) + ": launch of " + kernel + " with a grid out of range");
    raise_if_failed(stream);
    current(device);
    enqueue(stream, api().launch(function->second, grid, block, stream->stream, params, size),
            Api::kLaunch);
  }

  // Launcher::error_word: the address of |stream|'s error word, allocated
  // and zeroed at the first index kernel; it is read after the stream's work.
  uint64_t stream_error_word(Stream* stream) {
    sdk::require_not_null(stream, "stream");
    current(stream->device);
    if (stream->error_word == typename Api::DevicePtr{}) {
      void* address = nullptr;
      check(api().alloc_device(&address, kErrorWordSize), Api::kAllocDevice);
      stream->error_word = Api::address(static_cast<oar_memory_t>(address), 0);
      enqueue(stream, api().fill(stream->error_word, 0, kErrorWordSize, stream->stream),
              Api::kFill);
    }
    stream->check_error_word = true;
    return uint64_t(uintptr_t(stream->error_word));
  }

  Result free_memory(oar_memory_t memory, uint32_t kind) const {
    return kind == OAR_MEMORY_KIND_DEVICE ? api().free(Api::address(memory, 0))
                                          : api().free_host(memory);
  }

  Failure failure(const char* call, Result result) const {
    return {Api::status_of(result),
            std::string(Api::kPlugin) + ": " + call + " failed: " + api().error_text(result)};
  }

  void check(Result result, const char* call) const {
    if (result != Api::kSuccess) failure(call, result).raise();
  }

  void current(const Device* device) const { check(api().make_current(device), Api::kMakeCurrent); }

  // The result of enqueuing work: a sticky error (a fault of earlier
  // asynchronous work) fails the stream; any error throws.
  void enqueue(Stream* stream, Result result, const char* call) {
    if (result == Api::kSuccess) return;
    if (Api::is_sticky(result)) fail(stream, result, call).raise();
    failure(call, result).raise();
  }

  static Failure failure_of(Stream* stream) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    return stream->failure;
  }

  static void raise_if_failed(Stream* stream) {
    Failure failure = failure_of(stream);
    if (failure.failed()) failure.raise();
  }

  // Puts |stream| into the failed state (the first failure stays) and calls,
  // with the failure, the host callbacks the runtime will not run any more.
  Failure fail(Stream* stream, Result result, const char* call) {
    std::vector<HostCallback*> orphans;
    Failure failed;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      if (!stream->failure.failed()) stream->failure = failure(call, result);
      failed = stream->failure;
      if (Api::is_sticky(result)) {
        for (auto& c : stream->callbacks) {
          if (!c->claimed.exchange(true)) orphans.push_back(c.get());
        }
      }
    }
    for (HostCallback* c : orphans) run_callback(c, failed.code);
    return failed;
  }

  // A failure the plugin found itself (a watch hook's): the stream's state
  // from then on (the first failure stays). The runtime still runs its
  // queued host functions, so they are left to it.
  static Failure fail(Stream* stream, const Failure& found) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (!stream->failure.failed()) stream->failure = found;
    return stream->failure;
  }

  // The watch hooks' defaults (see the top of this file): nothing to watch.
  Failure watch_stream(Stream*, bool) { return {}; }
  void event_recorded(Event*, Stream*) {}
  Failure watch_event(Event*) { return {}; }

  // Waits for |stream|'s work; returns its failure (the stream's state).
  Failure synchronize(Stream* stream) {
    Failure failure = failure_of(stream);
    if (failure.failed()) return failure;
    current(stream->device);
    failure = plugin().watch_stream(stream, true);
    if (failure.failed()) return fail(stream, failure);
    Result result = api().stream_synchronize(stream->stream);
    if (result != Api::kSuccess) return fail(stream, result, Api::kStreamSynchronize);
    return check_index_errors(stream);
  }

  // After the stream's work is done: an index out of range an index kernel
  // recorded fails the stream with OUT_OF_RANGE, naming the operator, the
  // index and the bound (docs/ops.md, Errors).
  Failure check_index_errors(Stream* stream) {
    if (!stream->check_error_word) return {};
    stream->check_error_word = false;
    struct {
      uint32_t flag;
      int32_t op;
      int64_t index;
      int64_t bound;
    } word{};
    static_assert(sizeof word == kErrorWordSize, "kernels.cu's ErrorWord");
    Result result = api().copy_to_host(&word, stream->error_word, sizeof word, stream->stream);
    if (result == Api::kSuccess) result = api().stream_synchronize(stream->stream);
    if (result != Api::kSuccess) return fail(stream, result, "reading the index error word");
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

  // Synchronizes, settles the callbacks and destroys |stream| (already
  // removed from its device). A pending asynchronous error is dropped.
  void destroy_stream(Stream* stream) {
    std::unique_ptr<Stream> owned(stream);
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
    if (api().make_current(stream->device) == Api::kSuccess) {
      if (stream->error_word != typename Api::DevicePtr{}) (void)api().free(stream->error_word);
      (void)api().stream_destroy(stream->stream);
    }
  }

  sdk::AllocationTable allocations_{Api::kPlugin, sdk::AllocationTable::Unknown::kRefuse};

 private:
  std::mutex open_mutex_;  // guards open_
  std::unordered_set<Device*> open_;

  Api api() const { return static_cast<const Plugin*>(this)->gpu_api(); }
  Plugin& plugin() { return *static_cast<Plugin*>(this); }
};

}  // namespace oar::gpu
