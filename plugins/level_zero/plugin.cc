// The level_zero plugin: Intel GPUs (and NPUs) through Level Zero, whose
// loader is opened at run time (loader.h). Without a loader, a driver or a
// device it loads, serves zero devices and says why (a warning through the
// host's logger, shown by `oar list`): zeInit's result where zeInit fails.
//
// Handles: an oar_memory_t is a USM pointer: zeMemAllocDevice for DEVICE,
// zeMemAllocHost for HOST_PINNED, zeMemAllocShared for UNIFIED. A stream is
// an immediate command list on the device's first compute queue group, kept
// in order by a barrier after every command. An event is a host-visible
// Level Zero event of a pool of its own, signaled by the stream; a timing
// event's record also writes the device's global timestamp
// (zeCommandListAppendWriteGlobalTimestamp) into USM host memory, and
// event_elapsed_ms subtracts two of them (timerResolution ns per tick).
// Host callbacks run on the stream's own thread once a signal appended after
// the prior work completed; later work of the stream waits on an event the
// thread signals after the callback returned.
//
// Kernels: the opencl plugin's operators (plugins/opencl/kernels/*.cc, the
// same code) through LevelZeroBackend, this plugin's implementation of their
// launch layer (kernels/kernel.h's Backend): the kernels of modules.h (the
// same OpenCL C compiled to SPIR-V), created with zeModuleCreate on first use
// per device and (source, dtype); arguments set as the opencl plugin sets
// them (a buffer is a USM pointer here, a cl_mem there: 8 bytes in both;
// offsets, sizes, geometry structs and local memory the same). A stream's
// index-error record (common.cl's index_error) is USM host memory read when
// the stream synchronizes.
//
// Errors: a failed call throws with the ze_result_t's name. A lost device
// (ZE_RESULT_ERROR_DEVICE_LOST and the like, reported when waiting) fails the
// stream that saw it, as OAR's stream model says: synchronize and query
// return it from then on, events recorded afterwards carry it, and host
// callbacks are called with it.
//
// Shutdown order (device_close, and finalize for devices a host leaked): the
// streams (synchronized, callbacks settled, command lists destroyed), the
// events, the allocations, the kernels and modules; the contexts (one per
// driver) at finalize.
#include "oar/sdk/plugin.hpp"

#include <dlpack/dlpack.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <thread>
#include <unordered_set>
#include <utility>
#include <vector>

#include "dtype_tag.h"
#include "kernels/kernel.h"
#include "loader.h"
#include "modules.h"
#include "oar/dtype.hpp"
#include "oar/oar.h"
#include "oar/ops.hpp"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"

namespace oar::level_zero {
namespace sdk = oar::sdk;

constexpr uint64_t kAlignment = 256;  // of every allocation (min_alignment)
constexpr int32_t kDLOneAPI = 14;     // DLPack 0.7's kDLOneAPI (Debian 12's dlpack.h predates it)

// What a failure of Level Zero becomes in OAR's codes.
oar_status_t status_of(ze_result_t result) {
  switch (result) {
    case ZE_RESULT_SUCCESS:
      return OAR_STATUS_OK;
    case ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY:
    case ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY:
      return OAR_STATUS_RESOURCE_EXHAUSTED;
    case ZE_RESULT_ERROR_INVALID_ARGUMENT:
    case ZE_RESULT_ERROR_INVALID_NULL_HANDLE:
    case ZE_RESULT_ERROR_INVALID_NULL_POINTER:
    case ZE_RESULT_ERROR_INVALID_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_SIZE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ALIGNMENT:
    case ZE_RESULT_ERROR_INVALID_ENUMERATION:
    case ZE_RESULT_ERROR_OVERLAPPING_REGIONS:
      return OAR_STATUS_INVALID_ARGUMENT;
    case ZE_RESULT_ERROR_UNINITIALIZED:
    case ZE_RESULT_ERROR_NOT_AVAILABLE:
    case ZE_RESULT_ERROR_DEPENDENCY_UNAVAILABLE:
    case ZE_RESULT_ERROR_DEVICE_IN_LOW_POWER_STATE:
      return OAR_STATUS_UNAVAILABLE;
    case ZE_RESULT_ERROR_UNSUPPORTED_VERSION:
    case ZE_RESULT_ERROR_UNSUPPORTED_FEATURE:
    case ZE_RESULT_ERROR_UNSUPPORTED_ENUMERATION:
      return OAR_STATUS_UNIMPLEMENTED;
    case ZE_RESULT_ERROR_INSUFFICIENT_PERMISSIONS:
      return OAR_STATUS_PERMISSION_DENIED;
    case ZE_RESULT_ERROR_DEVICE_LOST:
    case ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET:
      return OAR_STATUS_ABORTED;
    default:
      return OAR_STATUS_INTERNAL;
  }
}

// The results after which the device's work is gone: they come from
// asynchronous work, so they fail the stream that reports them.
bool is_lost(ze_result_t result) {
  return result == ZE_RESULT_ERROR_DEVICE_LOST || result == ZE_RESULT_ERROR_DEVICE_REQUIRES_RESET;
}

// A failure: an OAR status and its message.
struct Failure {
  oar_status_t code = OAR_STATUS_OK;
  std::string message;
  bool failed() const { return code != OAR_STATUS_OK; }
  [[noreturn]] void raise() const { throw sdk::Error(code, message); }
};

Failure failure(const char* call, ze_result_t result) {
  return {status_of(result),
          std::string("level_zero: ") + call + " failed: " + result_name(result)};
}

void check(ze_result_t result, const char* call) {
  if (result != ZE_RESULT_SUCCESS) failure(call, result).raise();
}

// One point of a stream: a host-visible event of a pool of its own, and for
// timing a USM host word the device's global timestamp is written to. Its
// owners (events, streams that wait on it, callbacks) share it; the last one
// waits for it before destroying it, so the device never signals a freed
// event.
struct Point {
  const Loader* ze = nullptr;
  ze_context_handle_t context = nullptr;
  ze_event_pool_handle_t pool = nullptr;
  ze_event_handle_t event = nullptr;
  uint64_t* timestamp = nullptr;
  bool appended = false;  // given to a command list (else nothing will signal it)
  ~Point() {
    if (event != nullptr) {
      if (appended) ze->zeEventHostSynchronize(event, UINT64_MAX);
      ze->zeEventDestroy(event);
    }
    if (pool != nullptr) ze->zeEventPoolDestroy(pool);
    if (timestamp != nullptr) ze->zeMemFree(context, timestamp);
  }
};

// One device as discovery found it.
struct DeviceInfo {
  ze_driver_handle_t driver = nullptr;
  ze_device_handle_t device = nullptr;
  ze_context_handle_t context = nullptr;  // the driver's, shared by its devices
  uint32_t compute_ordinal = 0;           // the first queue group that computes
  uint32_t max_group_size = 1;            // work-items of a group (maxTotalGroupSize)
  double ns_per_tick = 1.0;               // of the global timestamp
  uint64_t timestamp_mask = ~0ull;
  bool fp64 = false;
  oar_device_properties_t properties{};
};

}  // namespace oar::level_zero

struct oar_device_s;

// A host callback waiting for its point of the stream.
struct CallbackTask {
  std::shared_ptr<oar::level_zero::Point> point;    // signaled after the prior work
  std::shared_ptr<oar::level_zero::Point> release;  // later work waits on it
  oar_host_callback_fn fn = nullptr;
  void* user_data = nullptr;
};

struct oar_stream_s {
  oar_device_s* device = nullptr;
  ze_command_list_handle_t list = nullptr;
  std::mutex mutex;  // guards the list (a command list is not thread-safe), failure, held
  oar::level_zero::Failure failure;
  // The index-error record of the stream's kernels (3 longs of USM host
  // memory, common.cl's index_error), created by the first kernel that needs
  // it; read when the stream synchronizes.
  int64_t* error_record = nullptr;
  // Points this stream's list waits on (events of other streams, callback
  // releases): kept alive until the stream next synchronizes.
  std::vector<std::shared_ptr<oar::level_zero::Point>> held;
  // The latest point appended, and whether commands were appended after it:
  // a query of a stream with nothing after a completed point is idle
  // without appending anything.
  std::shared_ptr<oar::level_zero::Point> last;
  bool pending = false;
  std::mutex callback_mutex;
  std::condition_variable callback_ready;
  std::deque<CallbackTask> callbacks;
  std::thread callback_thread;
  bool stopping = false;
};

struct oar_event_s {
  oar_device_s* device = nullptr;
  bool timing = false;
  std::mutex mutex;
  std::shared_ptr<oar::level_zero::Point> point;  // null until recorded
  oar::level_zero::Failure failure;               // of its stream's work before the record
};

// A kernel object and the lock held between setting its arguments and
// appending it (zeKernelSetArgumentValue is not thread-safe per kernel).
struct KernelSlot {
  ze_kernel_handle_t kernel = nullptr;
  std::mutex mutex;
};

struct oar_device_s {
  int32_t index = 0;
  const oar::level_zero::DeviceInfo* info = nullptr;
  std::mutex mutex;
  std::unordered_set<oar_stream_s*> streams;
  std::unordered_set<oar_event_s*> events;
  std::mutex kernel_mutex;                                     // guards modules and kernels
  std::map<std::string, ze_module_handle_t> modules;           // "elementwise|f32"
  std::map<std::string, std::unique_ptr<KernelSlot>> kernels;  // "elementwise|f32|u_neg"
};

namespace oar::level_zero {

// The tag the .cl sources name |dtype| by ("f32"), the opencl plugin's.
const char* dtype_tag(DLDataType dtype) {
  if (const char* tag = opencl::source_dtype_tag(dtype)) return tag;
  throw sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                   "level_zero: no kernels for dtype " + dtype_name(dtype));
}

class LevelZeroPlugin;

// The launch layer of the opencl plugin's kernels (plugins/opencl/kernels/
// kernel.h) on Level Zero; LevelZeroPlugin implements it.
class LevelZeroBackend final : public opencl::Backend {
 public:
  explicit LevelZeroBackend(LevelZeroPlugin* plugin) : plugin_(plugin) {}
  const char* name() const override { return "level_zero"; }
  opencl::DeviceTraits traits(const oar_kernel_call_t& call) const override;
  void check_view(const oar_kernel_call_t& call, opencl::Buffer memory, const sdk::ByteSpan& span,
                  const char* what) const override;
  opencl::Buffer error_flag(const oar_kernel_call_t& call) const override;
  void launch_1d(const oar_kernel_call_t& call, const opencl::KernelName& kernel, int64_t global,
                 std::initializer_list<opencl::KArg> args) const override;
  void launch_nd(const oar_kernel_call_t& call, const opencl::KernelName& kernel, uint32_t dims,
                 const size_t* global, const size_t* local,
                 std::initializer_list<opencl::KArg> args) const override;
  void fill(const oar_kernel_call_t& call, opencl::Buffer memory, uint64_t offset,
            const void* pattern, size_t pattern_size, uint64_t bytes) const override;
  void copy(const oar_kernel_call_t& call, opencl::Buffer from, uint64_t from_offset,
            opencl::Buffer to, uint64_t to_offset, uint64_t bytes) const override;

 private:
  LevelZeroPlugin* plugin_;
};

class LevelZeroPlugin {
 public:
  LevelZeroPlugin() {
    const std::string why = discover();
    if (!why.empty()) {
      sdk::log(OAR_LOG_LEVEL_WARNING, "level_zero: " + why + ". The plugin serves 0 devices.");
    }
  }

  ~LevelZeroPlugin() {
    std::unordered_set<oar_device_s*> open;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open.swap(open_);
    }
    for (oar_device_s* device : open) release(device);
    graveyard_.clear();  // waits for each point (a lost device: returns at once)
    std::unordered_set<ze_context_handle_t> contexts;
    for (const auto& info : devices_) contexts.insert(info->context);
    for (ze_context_handle_t context : contexts) ze_.zeContextDestroy(context);
  }

  // --- operators ----------------------------------------------------------------

  // Every operator of the opencl plugin, from the same code
  // (plugins/opencl/kernels/*.cc), launched through backend_.
  void register_kernels(const oar_kernel_registrar_t* registrar) {
    sdk::require_not_null(registrar, "registrar");
    sdk::KernelRegistrar kernels(registrar);
    opencl::register_all_kernels(kernels, backend_);
  }

  // --- the kernels' launch layer (LevelZeroBackend) ------------------------------

  opencl::DeviceTraits traits(const oar_kernel_call_t& call) const {
    sdk::require_not_null(call.device, "device");
    const DeviceInfo& info = *call.device->info;
    opencl::DeviceTraits traits;
    traits.fp64 = info.fp64;
    traits.max_work_group_size = info.max_group_size;
    traits.kind = info.properties.kind;
    traits.builds_at_run_time = false;  // modules compiled offline
    return traits;
  }

  void check_view(const oar_kernel_call_t& call, void* memory, const sdk::ByteSpan& span,
                  const char* what) const {
    sdk::AllocationTable::Allocation allocation;
    sdk::require(
        memory != nullptr && allocations_.find(memory, &allocation) &&
            allocation.device == call.device,
        OAR_STATUS_INVALID_ARGUMENT,
        std::string("level_zero: the ") + what + " tensor is not memory of the call's device");
    allocations_.check_range(memory, span.offset, span.size, what);
  }

  // The stream's index-error record, created (zeroed USM host memory) on
  // first use.
  void* error_flag(const oar_kernel_call_t& call) {
    oar_stream_s* stream = call_stream(call);
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (stream->error_record == nullptr) {
      ze_host_mem_alloc_desc_t host{};
      host.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
      void* record = nullptr;
      check(ze_.zeMemAllocHost(stream->device->info->context, &host, 3 * sizeof(int64_t),
                               sizeof(int64_t), &record),
            "zeMemAllocHost(stream error record)");
      std::memset(record, 0, 3 * sizeof(int64_t));
      stream->error_record = static_cast<int64_t*>(record);
    }
    return stream->error_record;
  }

  // Appends |kernel| over |groups| groups of |group| work-items (x, y, z) with
  // |args| set as the opencl plugin sets them.
  void launch(const oar_kernel_call_t& call, const opencl::KernelName& kernel,
              const uint32_t group[3], const ze_group_count_t& groups,
              std::initializer_list<opencl::KArg> args) {
    oar_stream_s* stream = call_stream(call);
    KernelSlot& slot = find_kernel(call.device, kernel);
    std::lock_guard<std::mutex> kernel_lock(slot.mutex);
    // common.cl's real_arg is double only in the f64 modules (the only ones
    // built with OAR_HAS_FP64).
    const bool wide = ops::dtype_bit(kernel.dtype) == ops::kF64;
    uint32_t index = 0;
    for (const opencl::KArg& arg : args) {
      size_t size = arg.size;
      const void* data = arg.data;
      if (arg.real != nullptr) {
        size = wide ? sizeof(double) : sizeof(float);
        data = wide ? static_cast<const void*>(&arg.real->wide) : &arg.real->narrow;
      }
      ze_result_t result = ze_.zeKernelSetArgumentValue(slot.kernel, index, size, data);
      if (result != ZE_RESULT_SUCCESS) {
        failure((std::string("zeKernelSetArgumentValue(") + kernel.name + ", " +
                 std::to_string(index) + ")")
                    .c_str(),
                result)
            .raise();
      }
      ++index;
    }
    check(ze_.zeKernelSetGroupSize(slot.kernel, group[0], group[1], group[2]),
          "zeKernelSetGroupSize");
    std::lock_guard<std::mutex> lock(stream->mutex);
    raise_if_failed_locked(stream);
    append(stream,
           ze_.zeCommandListAppendLaunchKernel(stream->list, slot.kernel, &groups, nullptr, 0,
                                               nullptr),
           "zeCommandListAppendLaunchKernel");
  }

  // 1-D over |global| work-items: groups of the size the driver suggests,
  // the last one padded (the kernels check their bound).
  void launch_1d(const oar_kernel_call_t& call, const opencl::KernelName& kernel, int64_t global,
                 std::initializer_list<opencl::KArg> args) {
    sdk::require(uint64_t(global) <= UINT32_MAX, OAR_STATUS_UNIMPLEMENTED,
                 std::string("level_zero: ") + kernel.name + " over more than 2^32 work-items");
    KernelSlot& slot = find_kernel(call.device, kernel);
    uint32_t group[3] = {1, 1, 1};
    check(ze_.zeKernelSuggestGroupSize(slot.kernel, uint32_t(global), 1, 1, &group[0], &group[1],
                                       &group[2]),
          "zeKernelSuggestGroupSize");
    group[0] = std::max(group[0], 1u);
    group[1] = group[2] = 1;
    const ze_group_count_t groups{uint32_t((uint64_t(global) + group[0] - 1) / group[0]), 1, 1};
    launch(call, kernel, group, groups, args);
  }

  // Exactly |global| in groups of |local| (a multiple of it, as OpenCL
  // requires), or of the suggested size cut to a divisor of |global|.
  void launch_nd(const oar_kernel_call_t& call, const opencl::KernelName& kernel, uint32_t dims,
                 const size_t* global, const size_t* local,
                 std::initializer_list<opencl::KArg> args) {
    sdk::require(dims >= 1 && dims <= 3, OAR_STATUS_INTERNAL,
                 std::string("level_zero: ") + kernel.name + ": 1 to 3 dimensions");
    size_t sizes[3] = {1, 1, 1};
    for (uint32_t d = 0; d < dims; ++d) {
      sizes[d] = global[d];
      sdk::require(global[d] <= UINT32_MAX, OAR_STATUS_UNIMPLEMENTED,
                   std::string("level_zero: ") + kernel.name + " over more than 2^32 work-items");
    }
    uint32_t group[3] = {1, 1, 1};
    if (local != nullptr) {
      for (uint32_t d = 0; d < dims; ++d) group[d] = uint32_t(local[d]);
    } else {
      KernelSlot& slot = find_kernel(call.device, kernel);
      check(ze_.zeKernelSuggestGroupSize(slot.kernel, uint32_t(sizes[0]), uint32_t(sizes[1]),
                                         uint32_t(sizes[2]), &group[0], &group[1], &group[2]),
            "zeKernelSuggestGroupSize");
      // The range is exact (these kernels do not check a bound): a group that
      // divides it.
      for (int d = 0; d < 3; ++d)
        group[d] = uint32_t(std::gcd(size_t(std::max(group[d], 1u)), sizes[d]));
    }
    ze_group_count_t groups{1, 1, 1};
    uint32_t* counts[3] = {&groups.groupCountX, &groups.groupCountY, &groups.groupCountZ};
    for (int d = 0; d < 3; ++d) {
      sdk::require(group[d] != 0 && sizes[d] % group[d] == 0, OAR_STATUS_INTERNAL,
                   std::string("level_zero: ") + kernel.name +
                       ": the range is not a multiple of the group size");
      *counts[d] = uint32_t(sizes[d] / group[d]);
    }
    launch(call, kernel, group, groups, args);
  }

  void fill(const oar_kernel_call_t& call, void* memory, uint64_t offset, const void* pattern,
            size_t pattern_size, uint64_t bytes) {
    if (bytes == 0) return;
    oar_stream_s* stream = call_stream(call);
    std::lock_guard<std::mutex> lock(stream->mutex);
    raise_if_failed_locked(stream);
    append(stream,
           ze_.zeCommandListAppendMemoryFill(stream->list, at(memory, offset), pattern,
                                             pattern_size, size_t(bytes), nullptr, 0, nullptr),
           "zeCommandListAppendMemoryFill");
  }

  void copy_on(const oar_kernel_call_t& call, void* from, uint64_t from_offset, void* to,
               uint64_t to_offset, uint64_t bytes) {
    if (bytes == 0) return;
    copy(call_stream(call), at(to, to_offset), at(from, from_offset), bytes);
  }

  // --- devices ------------------------------------------------------------------

  void device_count(int32_t* out_count) {
    sdk::require_not_null(out_count, "out_count");
    *out_count = int32_t(devices_.size());
  }

  void device_properties(int32_t index, oar_device_properties_t* out_properties) {
    require_index(index);
    sdk::copy_properties(devices_[size_t(index)]->properties, out_properties);
  }

  void device_open(int32_t index, oar_device_t* out_device) {
    require_index(index);
    sdk::require_not_null(out_device, "out_device");
    auto device = std::make_unique<oar_device_s>();
    device->index = index;
    device->info = devices_[size_t(index)].get();
    std::lock_guard<std::mutex> lock(mutex_);
    open_.insert(device.get());
    *out_device = device.release();
  }

  void device_close(oar_device_t device) {
    if (device == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sdk::require(open_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "device_close: not an open level_zero device");
    }
    release(device);
  }

  void device_synchronize(oar_device_t device) {
    sdk::require_not_null(device, "device");
    std::vector<oar_stream_s*> streams;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      streams.assign(device->streams.begin(), device->streams.end());
    }
    Failure first;
    for (oar_stream_s* stream : streams) {
      Failure failed = synchronize(stream);
      if (failed.failed() && !first.failed()) first = failed;
    }
    if (first.failed()) first.raise();
  }

  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_free, "out_free");
    sdk::require_not_null(out_total, "out_total");
    // Level Zero 1.4 has no query of free memory: what this plugin's live
    // device allocations leave of the device's memory.
    const uint64_t total = device->info->properties.total_memory;
    const DeviceInfo* info = device->info;
    uint64_t used = allocations_.allocated_bytes(
        [info](const oar_device_s* owner) { return owner->info == info; });
    *out_free = used >= total ? 0 : total - used;
    *out_total = total;
  }

  // --- streams ------------------------------------------------------------------

  void stream_create(oar_device_t device, const oar_stream_desc_t* desc, oar_stream_t* out_stream) {
    sdk::require_not_null(device, "device");
    sdk::check_stream_desc(desc);
    sdk::require_not_null(out_stream, "out_stream");
    auto stream = std::make_unique<oar_stream_s>();
    stream->device = device;
    ze_command_queue_desc_t queue{};
    queue.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC;
    queue.ordinal = device->info->compute_ordinal;
    queue.index = 0;
    queue.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS;
    queue.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL;
    check(ze_.zeCommandListCreateImmediate(device->info->context, device->info->device, &queue,
                                           &stream->list),
          "zeCommandListCreateImmediate");
    oar_stream_s* raw = stream.get();
    raw->callback_thread = std::thread([this, raw] { callback_loop(raw); });
    std::lock_guard<std::mutex> lock(device->mutex);
    device->streams.insert(raw);
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
    Failure failed = synchronize(stream);
    if (failed.failed()) failed.raise();
  }

  void stream_query(oar_stream_t stream, bool* out_idle) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(out_idle, "out_idle");
    std::shared_ptr<Point> point;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      raise_if_failed_locked(stream);
      point = stream->pending || stream->last == nullptr ? signal(stream, false) : stream->last;
    }
    ze_result_t result = ze_.zeEventQueryStatus(point->event);
    if (result == ZE_RESULT_NOT_READY) {
      *out_idle = false;  // the stream keeps the point (last) until a later one
      return;
    }
    if (result != ZE_RESULT_SUCCESS) fail(stream, result, "zeEventQueryStatus").raise();
    Failure failed = read_error_record(stream);
    if (failed.failed()) failed.raise();
    *out_idle = true;
  }

  void stream_wait_event(oar_stream_t stream, oar_event_t event) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(event, "event");
    sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                 "stream_wait_event: the event belongs to another device");
    std::shared_ptr<Point> point;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      sdk::require(event->point != nullptr || event->failure.failed(),
                   OAR_STATUS_FAILED_PRECONDITION,
                   "stream_wait_event: the event was never recorded");
      point = event->point;
    }
    if (point == nullptr) return;  // recorded on a failed stream: nothing to wait for
    std::lock_guard<std::mutex> lock(stream->mutex);
    append(stream, ze_.zeCommandListAppendWaitOnEvents(stream->list, 1, &point->event),
           "zeCommandListAppendWaitOnEvents");
    stream->held.push_back(std::move(point));
  }

  void stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                void* user_data) {
    sdk::require_not_null(stream, "stream");
    sdk::require_not_null(callback, "callback");
    CallbackTask task;
    task.fn = callback;
    task.user_data = user_data;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      if (!stream->failure.failed()) {
        task.point = signal(stream, false);
        task.release = make_point(stream->device, false);
        ze_result_t result =
            ze_.zeCommandListAppendWaitOnEvents(stream->list, 1, &task.release->event);
        if (result != ZE_RESULT_SUCCESS) {
          task.release.reset();
          append(stream, result, "zeCommandListAppendWaitOnEvents");
        }
        stream->pending = true;  // later work waits for the callback
        stream->held.push_back(task.release);
      }
    }
    // On a failed stream the task has no point: the thread calls it with the
    // failure, after the callbacks before it.
    std::lock_guard<std::mutex> lock(stream->callback_mutex);
    stream->callbacks.push_back(std::move(task));
    stream->callback_ready.notify_one();
  }

  // --- events -------------------------------------------------------------------

  void event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
    sdk::require_not_null(device, "device");
    sdk::check_event_flags(flags, true);
    sdk::require_not_null(out_event, "out_event");
    auto event = std::make_unique<oar_event_s>();
    event->device = device;
    event->timing = (flags & OAR_EVENT_FLAG_TIMING) != 0;
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
    retire(std::move(event->point));
    delete event;
  }

  void event_record(oar_event_t event, oar_stream_t stream) {
    sdk::require_not_null(event, "event");
    sdk::require_not_null(stream, "stream");
    sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                 "event_record: the event and the stream belong to different devices");
    std::shared_ptr<Point> point;
    Failure failed;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      failed = stream->failure;
      if (!failed.failed()) point = signal(stream, event->timing);
    }
    std::lock_guard<std::mutex> lock(event->mutex);
    event->failure = failed;
    event->point.swap(point);
    retire(std::move(point));  // the previous record's
  }

  void event_query(oar_event_t event, bool* out_done) {
    sdk::require_not_null(event, "event");
    sdk::require_not_null(out_done, "out_done");
    std::lock_guard<std::mutex> lock(event->mutex);
    if (event->failure.failed()) event->failure.raise();
    if (event->point == nullptr) {
      *out_done = true;
      return;
    }
    ze_result_t result = ze_.zeEventQueryStatus(event->point->event);
    if (result == ZE_RESULT_NOT_READY) {
      *out_done = false;
      return;
    }
    if (result != ZE_RESULT_SUCCESS) {
      event->failure = failure("zeEventQueryStatus", result);
      event->failure.raise();
    }
    *out_done = true;
  }

  void event_synchronize(oar_event_t event) {
    sdk::require_not_null(event, "event");
    std::shared_ptr<Point> point;
    {
      std::lock_guard<std::mutex> lock(event->mutex);
      if (event->failure.failed()) event->failure.raise();
      point = event->point;
    }
    if (point == nullptr) return;
    ze_result_t result = ze_.zeEventHostSynchronize(point->event, UINT64_MAX);
    if (result != ZE_RESULT_SUCCESS) {
      std::lock_guard<std::mutex> lock(event->mutex);
      event->failure = failure("zeEventHostSynchronize", result);
      event->failure.raise();
    }
  }

  void event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
    sdk::require_not_null(start, "start");
    sdk::require_not_null(end, "end");
    sdk::require_not_null(out_ms, "out_ms");
    sdk::require(start->device == end->device, OAR_STATUS_INVALID_ARGUMENT,
                 "event_elapsed_ms: the events belong to different devices");
    uint64_t ticks[2] = {};
    int i = 0;
    for (oar_event_t event : {start, end}) {
      std::lock_guard<std::mutex> lock(event->mutex);
      sdk::require(event->timing, OAR_STATUS_FAILED_PRECONDITION,
                   "event_elapsed_ms: an event was not created with OAR_EVENT_FLAG_TIMING");
      if (event->failure.failed()) event->failure.raise();
      sdk::require(event->point != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                   "event_elapsed_ms: an event was never recorded");
      ze_result_t result = ze_.zeEventQueryStatus(event->point->event);
      sdk::require(result != ZE_RESULT_NOT_READY, OAR_STATUS_FAILED_PRECONDITION,
                   "event_elapsed_ms: an event is not complete");
      check(result, "zeEventQueryStatus");
      ticks[i++] = *event->point->timestamp;
    }
    const DeviceInfo& info = *start->device->info;
    const uint64_t elapsed = (ticks[1] - ticks[0]) & info.timestamp_mask;
    *out_ms = float(double(elapsed) * info.ns_per_tick / 1e6);
  }

  // --- memory -------------------------------------------------------------------

  void memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                       oar_memory_t* out_memory) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_memory, "out_memory");
    const DeviceInfo& info = *device->info;
    sdk::require(kind == OAR_MEMORY_KIND_DEVICE || kind == OAR_MEMORY_KIND_HOST_PINNED ||
                     kind == OAR_MEMORY_KIND_UNIFIED,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_allocate: kind " + std::to_string(kind) +
                     " is not one the device lists (DEVICE, HOST_PINNED, UNIFIED)");
    sdk::require(size <= info.properties.max_allocation_size, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_allocate: " + std::to_string(size) + " bytes exceed max_allocation_size " +
                     std::to_string(info.properties.max_allocation_size));
    const size_t bytes = size == 0 ? 1 : size_t(size);  // a zero-size handle is still unique
    ze_device_mem_alloc_desc_t device_desc{};
    device_desc.stype = ZE_STRUCTURE_TYPE_DEVICE_MEM_ALLOC_DESC;
    ze_host_mem_alloc_desc_t host_desc{};
    host_desc.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
    void* pointer = nullptr;
    if (kind == OAR_MEMORY_KIND_DEVICE) {
      check(ze_.zeMemAllocDevice(info.context, &device_desc, bytes, kAlignment, info.device,
                                 &pointer),
            "zeMemAllocDevice");
    } else if (kind == OAR_MEMORY_KIND_HOST_PINNED) {
      check(ze_.zeMemAllocHost(info.context, &host_desc, bytes, kAlignment, &pointer),
            "zeMemAllocHost");
    } else {
      check(ze_.zeMemAllocShared(info.context, &device_desc, &host_desc, bytes, kAlignment,
                                 info.device, &pointer),
            "zeMemAllocShared");
    }
    allocations_.insert(pointer, {size, kind, device});
    *out_memory = static_cast<oar_memory_t>(pointer);
  }

  void memory_free(oar_device_t device, oar_memory_t memory) {
    if (memory == nullptr) return;
    sdk::require_not_null(device, "device");
    allocations_.erase(memory, device);
    check(ze_.zeMemFree(device->info->context, memory), "zeMemFree");
  }

  void memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_address, "out_address");
    sdk::AllocationTable::Allocation allocation;
    sdk::require(allocations_.find(memory, &allocation) && allocation.device == device,
                 OAR_STATUS_INVALID_ARGUMENT,
                 "memory_host_address: not an allocation of this device");
    sdk::require(allocation.kind != OAR_MEMORY_KIND_DEVICE, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_host_address: the allocation is device memory, not host-visible");
    *out_address = memory;  // USM host and shared memory: one address on both sides
  }

  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_h2d destination");
    if (size == 0) return;
    sdk::require_not_null(src, "memory_copy_h2d source");
    copy(stream, at(dst, dst_offset), src, size);
  }

  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2h source");
    if (size == 0) return;
    sdk::require_not_null(dst, "memory_copy_d2h destination");
    copy(stream, dst, at(src, src_offset), size);
  }

  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_copy_d2d destination");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2d source");
    char* to = at(dst, dst_offset);
    const char* from = at(src, src_offset);
    if (size == 0 || to == from) return;  // identical ranges: nothing to move
    sdk::require(to + size <= from || from + size <= to, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_copy_d2d: source and destination ranges partly overlap");
    copy(stream, to, from, size);
  }

  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size) {
    sdk::require_not_null(stream, "stream");
    allocations_.check_range(dst, dst_offset, size, "memory_fill destination");
    if (size == 0) return;
    std::lock_guard<std::mutex> lock(stream->mutex);
    raise_if_failed_locked(stream);
    append(stream,
           ze_.zeCommandListAppendMemoryFill(stream->list, at(dst, dst_offset), &value, 1,
                                             size_t(size), nullptr, 0, nullptr),
           "zeCommandListAppendMemoryFill");
  }

 private:
  static char* at(oar_memory_t memory, uint64_t offset) {
    return reinterpret_cast<char*>(memory) + offset;
  }
  static char* at(void* memory, uint64_t offset) { return static_cast<char*>(memory) + offset; }

  // The call's stream, checked to be of the call's device.
  static oar_stream_s* call_stream(const oar_kernel_call_t& call) {
    sdk::require_not_null(call.device, "device");
    sdk::require_not_null(call.stream, "stream");
    sdk::require(call.stream->device == call.device, OAR_STATUS_INVALID_ARGUMENT,
                 "level_zero: the call's stream belongs to another device");
    return call.stream;
  }

  void copy(oar_stream_s* stream, void* to, const void* from, uint64_t size) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    raise_if_failed_locked(stream);
    append(stream,
           ze_.zeCommandListAppendMemoryCopy(stream->list, to, from, size_t(size), nullptr, 0,
                                             nullptr),
           "zeCommandListAppendMemoryCopy");
  }

  // The result of appending a command (under the stream's lock): a lost
  // device fails the stream; any error throws. After a command, a barrier
  // keeps the list in order (Level Zero 1.4 has no in-order lists).
  void append(oar_stream_s* stream, ze_result_t result, const char* call) {
    if (result == ZE_RESULT_SUCCESS) {
      result = ze_.zeCommandListAppendBarrier(stream->list, nullptr, 0, nullptr);
      call = "zeCommandListAppendBarrier";
    }
    stream->pending = true;
    if (result == ZE_RESULT_SUCCESS) return;
    if (is_lost(result)) {
      if (!stream->failure.failed()) stream->failure = failure(call, result);
      stream->failure.raise();
    }
    failure(call, result).raise();
  }

  static void raise_if_failed_locked(oar_stream_s* stream) {
    if (stream->failure.failed()) stream->failure.raise();
  }

  static Failure failure_of(oar_stream_s* stream) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    return stream->failure;
  }

  // Puts |stream| into the failed state (the first failure stays).
  Failure fail(oar_stream_s* stream, ze_result_t result, const char* call) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (!stream->failure.failed()) stream->failure = failure(call, result);
    return stream->failure;
  }

  // Keeps |point| until the device signaled it (a point is destroyed only
  // after its event completed): make_point destroys the completed ones.
  void retire(std::shared_ptr<Point> point) {
    if (point == nullptr) return;
    std::lock_guard<std::mutex> lock(graveyard_mutex_);
    graveyard_.push_back(std::move(point));
  }

  void reap() {
    std::lock_guard<std::mutex> lock(graveyard_mutex_);
    graveyard_.erase(std::remove_if(graveyard_.begin(), graveyard_.end(),
                                    [this](const std::shared_ptr<Point>& p) {
                                      return p.use_count() == 1 &&
                                             (!p->appended || ze_.zeEventQueryStatus(p->event) !=
                                                                  ZE_RESULT_NOT_READY);
                                    }),
                     graveyard_.end());
  }

  // A new point (event of its own pool; with a USM host timestamp word).
  std::shared_ptr<Point> make_point(oar_device_s* device, bool timestamp) {
    reap();
    const DeviceInfo& info = *device->info;
    auto point = std::make_shared<Point>();
    point->ze = &ze_;
    point->context = info.context;
    ze_event_pool_desc_t pool{};
    pool.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC;
    pool.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE;
    pool.count = 1;
    ze_device_handle_t devices[] = {info.device};
    check(ze_.zeEventPoolCreate(info.context, &pool, 1, devices, &point->pool),
          "zeEventPoolCreate");
    ze_event_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_EVENT_DESC;
    desc.index = 0;
    desc.signal = ZE_EVENT_SCOPE_FLAG_HOST;
    desc.wait = ZE_EVENT_SCOPE_FLAG_HOST;
    check(ze_.zeEventCreate(point->pool, &desc, &point->event), "zeEventCreate");
    if (timestamp) {
      ze_host_mem_alloc_desc_t host{};
      host.stype = ZE_STRUCTURE_TYPE_HOST_MEM_ALLOC_DESC;
      void* word = nullptr;
      check(ze_.zeMemAllocHost(info.context, &host, sizeof(uint64_t), sizeof(uint64_t), &word),
            "zeMemAllocHost");
      point->timestamp = static_cast<uint64_t*>(word);
      *point->timestamp = 0;
    }
    return point;
  }

  // Appends a signal of a new point after the stream's work (under the
  // stream's lock); with |timestamp|, the device's global timestamp is
  // written first and signals it.
  std::shared_ptr<Point> signal(oar_stream_s* stream, bool timestamp) {
    std::shared_ptr<Point> point = make_point(stream->device, timestamp);
    ze_result_t result = timestamp ? ze_.zeCommandListAppendWriteGlobalTimestamp(
                                         stream->list, point->timestamp, point->event, 0, nullptr)
                                   : ze_.zeCommandListAppendSignalEvent(stream->list, point->event);
    append(
        stream, result,
        timestamp ? "zeCommandListAppendWriteGlobalTimestamp" : "zeCommandListAppendSignalEvent");
    point->appended = true;
    // Never destroyed here, under the stream's lock: a point's destructor
    // waits for it, and a callback's point waits for the callback thread,
    // which takes this lock.
    retire(std::exchange(stream->last, point));
    stream->pending = false;
    return point;
  }

  // Waits for |stream|'s work; returns its failure (the stream's state).
  Failure synchronize(oar_stream_s* stream) {
    std::shared_ptr<Point> point;
    std::vector<std::shared_ptr<Point>> held;
    {
      std::lock_guard<std::mutex> lock(stream->mutex);
      if (stream->failure.failed()) return stream->failure;
      try {
        point = signal(stream, false);
      } catch (const sdk::Error& e) {
        return {e.code(), e.what()};
      }
      held.swap(stream->held);
    }
    ze_result_t result = ze_.zeEventHostSynchronize(point->event, UINT64_MAX);
    if (result != ZE_RESULT_SUCCESS) {
      point->appended = false;  // never signaled now: do not wait for it again
      return fail(stream, result, "zeEventHostSynchronize");
    }
    return read_error_record(stream);
  }

  // After the stream's work completed: the stream fails (OUT_OF_RANGE) where a
  // kernel wrote its index-error record ([0]: the operator's code in its low
  // int, [1] the index, [2] the bound).
  Failure read_error_record(oar_stream_s* stream) {
    std::lock_guard<std::mutex> lock(stream->mutex);
    if (stream->failure.failed() || stream->error_record == nullptr) return stream->failure;
    int32_t code = 0;
    std::memcpy(&code, &stream->error_record[0], sizeof(code));
    if (code != 0) {
      stream->failure = {OAR_STATUS_OUT_OF_RANGE,
                         std::string("level_zero: ") + opencl::index_error_operator(code) +
                             ": index " + std::to_string(stream->error_record[1]) +
                             " out of range [0, " + std::to_string(stream->error_record[2]) +
                             "); the stream has failed"};
    }
    return stream->failure;
  }

  // The stream's callback thread: each task in order, once its point is
  // signaled (or at once with the failure where the stream failed), then
  // releases the stream's later work.
  void callback_loop(oar_stream_s* stream) {
    for (;;) {
      CallbackTask task;
      {
        std::unique_lock<std::mutex> lock(stream->callback_mutex);
        stream->callback_ready.wait(
            lock, [stream] { return stream->stopping || !stream->callbacks.empty(); });
        if (stream->callbacks.empty()) return;  // stopping, and nothing left
        task = std::move(stream->callbacks.front());
        stream->callbacks.pop_front();
      }
      oar_status_t status = OAR_STATUS_OK;
      if (task.point != nullptr) {
        ze_result_t result = ze_.zeEventHostSynchronize(task.point->event, UINT64_MAX);
        if (result != ZE_RESULT_SUCCESS) {
          task.point->appended = false;
          status = fail(stream, result, "zeEventHostSynchronize").code;
        } else {
          status = failure_of(stream).code;
        }
      } else {
        status = failure_of(stream).code;
        if (status == OAR_STATUS_OK) status = OAR_STATUS_CANCELLED;
      }
      task.fn(task.user_data, status);
      if (task.release != nullptr) ze_.zeEventHostSignal(task.release->event);
    }
  }

  // Synchronizes, settles the callbacks and destroys |stream| (already
  // removed from its device). A pending failure is dropped.
  void destroy_stream(oar_stream_s* stream) {
    std::unique_ptr<oar_stream_s> owned(stream);
    (void)synchronize(stream);
    {
      std::lock_guard<std::mutex> lock(stream->callback_mutex);
      stream->stopping = true;
      stream->callback_ready.notify_one();
    }
    if (stream->callback_thread.joinable()) stream->callback_thread.join();
    stream->held.clear();
    stream->last.reset();
    ze_.zeCommandListDestroy(stream->list);
    if (stream->error_record != nullptr) {
      ze_.zeMemFree(stream->device->info->context, stream->error_record);
    }
  }

  // The module of kernels/<source>.cl for the kernel's dtype and its kernel
  // on |device|, created on first use.
  KernelSlot& find_kernel(oar_device_s* device, const opencl::KernelName& kernel) {
    sdk::require(kernel.defines == nullptr, OAR_STATUS_INTERNAL,
                 std::string("level_zero: ") + kernel.name +
                     ": the modules are compiled offline, without a text of their own");
    const char* source = source_name(kernel.source);
    const char* tag = dtype_tag(kernel.dtype);
    std::string module_key = std::string(source) + "|" + tag;
    std::string kernel_key = module_key + "|" + kernel.name;
    std::lock_guard<std::mutex> lock(device->kernel_mutex);
    auto found = device->kernels.find(kernel_key);
    if (found != device->kernels.end()) return *found->second;
    auto module = device->modules.find(module_key);
    if (module == device->modules.end()) {
      module = device->modules.emplace(module_key, create_module(*device->info, source, tag)).first;
    }
    auto slot = std::make_unique<KernelSlot>();
    ze_kernel_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC;
    desc.pKernelName = kernel.name;
    ze_result_t result = ze_.zeKernelCreate(module->second, &desc, &slot->kernel);
    // The modules hold every __kernel of their source as compiled for the
    // dtype (checked at build time); what OAR_HAS_FP64 leaves out of the
    // modules of the other dtypes (cast_to_f64) is missing.
    sdk::require(result != ZE_RESULT_ERROR_INVALID_KERNEL_NAME, OAR_STATUS_UNIMPLEMENTED,
                 std::string("level_zero: the SPIR-V module of kernels/") + source + ".cl for " +
                     tag + " has no kernel " + kernel.name +
                     " (the modules of dtypes other than f64 are compiled without fp64)");
    check(result, (std::string("zeKernelCreate(") + kernel.name + ")").c_str());
    return *device->kernels.emplace(kernel_key, std::move(slot)).first->second;
  }

  // kernels/<name>.cl of |source| (the modules' source names).
  static const char* source_name(opencl::Source source) {
    switch (source) {
      case opencl::Source::kElementwise:
        return "elementwise";
      case opencl::Source::kReduction:
        return "reduction";
      case opencl::Source::kNn:
        return "nn";
      case opencl::Source::kGrad:
        return "grad";
      case opencl::Source::kNnGrad:
        return "nn_grad";
      case opencl::Source::kOptimizer:
        return "optimizer";
      case opencl::Source::kLayoutV2:
        return "layout_v2";
      case opencl::Source::kMathV2:
        return "math_v2";
      case opencl::Source::kGemm:
        return "gemm";
    }
    return "";
  }

  ze_module_handle_t create_module(const DeviceInfo& info, const char* source, const char* tag) {
    sdk::require(std::strcmp(tag, "f64") != 0 || info.fp64, OAR_STATUS_UNIMPLEMENTED,
                 "level_zero: the device has no fp64, so no f64 kernels");
    const SpirvModule* spirv = find_spirv_module(source, tag);
    sdk::require(
        spirv != nullptr, OAR_STATUS_UNIMPLEMENTED,
        std::string("level_zero: no SPIR-V module of kernels/") + source + ".cl for " + tag);
    ze_module_desc_t desc{};
    desc.stype = ZE_STRUCTURE_TYPE_MODULE_DESC;
    desc.format = ZE_MODULE_FORMAT_IL_SPIRV;
    desc.inputSize = spirv->size;
    desc.pInputModule = spirv->data;
    desc.pBuildFlags = "";
    ze_module_handle_t module = nullptr;
    ze_module_build_log_handle_t log = nullptr;
    ze_result_t result = ze_.zeModuleCreate(info.context, info.device, &desc, &module, &log);
    std::string text;
    if (result != ZE_RESULT_SUCCESS && log != nullptr) {
      size_t size = 0;
      if (ze_.zeModuleBuildLogGetString(log, &size, nullptr) == ZE_RESULT_SUCCESS && size > 0) {
        text.resize(size);
        ze_.zeModuleBuildLogGetString(log, &size, text.data());
        text.resize(std::strlen(text.c_str()));
      }
    }
    if (log != nullptr) ze_.zeModuleBuildLogDestroy(log);
    if (result != ZE_RESULT_SUCCESS) {
      Failure failed = failure(
          (std::string("zeModuleCreate(kernels/") + source + ".cl, " + tag + ")").c_str(), result);
      if (!text.empty()) failed.message += ": " + text;
      failed.raise();
    }
    return module;
  }

  // Shutdown order: streams, events, memory, kernels, modules.
  void release(oar_device_s* device) {
    std::unordered_set<oar_stream_s*> streams;
    std::unordered_set<oar_event_s*> events;
    {
      std::lock_guard<std::mutex> lock(device->mutex);
      streams.swap(device->streams);
      events.swap(device->events);
    }
    for (oar_stream_s* stream : streams) destroy_stream(stream);
    for (oar_event_s* event : events) {
      retire(std::move(event->point));
      delete event;
    }
    size_t leaked = 0;
    for (auto& [memory, allocation] : allocations_.take_all(device)) {
      ze_.zeMemFree(device->info->context, memory);
      ++leaked;
    }
    if (!streams.empty() || !events.empty() || leaked != 0) {
      sdk::log(OAR_LOG_LEVEL_WARNING,
               "level_zero: device " + std::to_string(device->index) + " closed with " +
                   std::to_string(streams.size()) + " stream(s), " + std::to_string(events.size()) +
                   " event(s) and " + std::to_string(leaked) + " allocation(s) still open");
    }
    for (auto& [key, slot] : device->kernels) ze_.zeKernelDestroy(slot->kernel);
    device->kernels.clear();
    for (auto& [key, module] : device->modules) ze_.zeModuleDestroy(module);
    device->modules.clear();
    delete device;
  }

  // Opens the loader and lists the devices; returns why there are none.
  std::string discover() {
    if (!ze_.available()) return ze_.why();
    ze_result_t result = ze_.zeInit(0);
    if (result != ZE_RESULT_SUCCESS) {
      return "zeInit failed: " + result_name(result) +
             " (no Level Zero driver, such as intel-level-zero-gpu, found a device)";
    }
    uint32_t driver_count = 0;
    result = ze_.zeDriverGet(&driver_count, nullptr);
    if (result != ZE_RESULT_SUCCESS) return "zeDriverGet failed: " + result_name(result);
    if (driver_count == 0) return "no Level Zero driver";
    std::vector<ze_driver_handle_t> drivers(driver_count);
    result = ze_.zeDriverGet(&driver_count, drivers.data());
    if (result != ZE_RESULT_SUCCESS) return "zeDriverGet failed: " + result_name(result);
    size_t seen = 0;
    for (ze_driver_handle_t driver : drivers) {
      uint32_t count = 0;
      if (ze_.zeDeviceGet(driver, &count, nullptr) != ZE_RESULT_SUCCESS || count == 0) continue;
      std::vector<ze_device_handle_t> handles(count);
      if (ze_.zeDeviceGet(driver, &count, handles.data()) != ZE_RESULT_SUCCESS) continue;
      ze_context_desc_t context_desc{};
      context_desc.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC;
      ze_context_handle_t context = nullptr;
      result = ze_.zeContextCreate(driver, &context_desc, &context);
      if (result != ZE_RESULT_SUCCESS) {
        sdk::log(OAR_LOG_LEVEL_WARNING,
                 "level_zero: a driver's " + std::to_string(count) +
                     " device(s) skipped: zeContextCreate failed: " + result_name(result));
        continue;
      }
      std::string version = driver_version(driver);
      bool used = false;
      for (ze_device_handle_t handle : handles) {
        ++seen;
        auto info = std::make_unique<DeviceInfo>();
        info->driver = driver;
        info->device = handle;
        info->context = context;
        std::string problem = describe(version, info.get());
        if (problem.empty()) {
          devices_.push_back(std::move(info));
          used = true;
        } else {
          sdk::log(OAR_LOG_LEVEL_WARNING,
                   "level_zero: device " + std::to_string(seen - 1) + " skipped: " + problem);
        }
      }
      if (!used) ze_.zeContextDestroy(context);
    }
    if (seen == 0) return "no device (the Level Zero drivers list none)";
    if (devices_.empty()) return "no usable device (" + std::to_string(seen) + " skipped)";
    return "";
  }

  std::string driver_version(ze_driver_handle_t driver) {
    ze_api_version_t api = ZE_API_VERSION_1_0;
    ze_.zeDriverGetApiVersion(driver, &api);
    ze_driver_properties_t properties{};
    properties.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES;
    std::string text = "Level Zero " + std::to_string(ZE_MAJOR_VERSION(api)) + "." +
                       std::to_string(ZE_MINOR_VERSION(api));
    if (ze_.zeDriverGetProperties(driver, &properties) == ZE_RESULT_SUCCESS) {
      // Intel's drivers encode major.minor.build in the one number.
      const uint32_t v = properties.driverVersion;
      text += ", driver " + std::to_string(v >> 24) + "." + std::to_string((v >> 16) & 0xff) + "." +
              std::to_string(v & 0xffff);
    }
    return text;
  }

  std::string describe(const std::string& version, DeviceInfo* info) {
    ze_device_properties_t device{};
    device.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES;  // timerResolution in ns
    ze_result_t result = ze_.zeDeviceGetProperties(info->device, &device);
    if (result != ZE_RESULT_SUCCESS) return "zeDeviceGetProperties: " + result_name(result);
    ze_device_module_properties_t module{};
    module.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES;
    result = ze_.zeDeviceGetModuleProperties(info->device, &module);
    if (result != ZE_RESULT_SUCCESS) return "zeDeviceGetModuleProperties: " + result_name(result);
    uint32_t memory_count = 0;
    result = ze_.zeDeviceGetMemoryProperties(info->device, &memory_count, nullptr);
    std::vector<ze_device_memory_properties_t> memories(memory_count);
    for (auto& m : memories) m.stype = ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
    if (result == ZE_RESULT_SUCCESS && memory_count > 0) {
      result = ze_.zeDeviceGetMemoryProperties(info->device, &memory_count, memories.data());
    }
    if (result != ZE_RESULT_SUCCESS) return "zeDeviceGetMemoryProperties: " + result_name(result);
    uint64_t total = 0;
    for (const auto& m : memories) total += m.totalSize;
    uint32_t group_count = 0;
    result = ze_.zeDeviceGetCommandQueueGroupProperties(info->device, &group_count, nullptr);
    std::vector<ze_command_queue_group_properties_t> groups(group_count);
    for (auto& g : groups) g.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
    if (result == ZE_RESULT_SUCCESS && group_count > 0) {
      result =
          ze_.zeDeviceGetCommandQueueGroupProperties(info->device, &group_count, groups.data());
    }
    if (result != ZE_RESULT_SUCCESS) {
      return "zeDeviceGetCommandQueueGroupProperties: " + result_name(result);
    }
    ze_device_compute_properties_t compute_properties{};
    compute_properties.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES;
    result = ze_.zeDeviceGetComputeProperties(info->device, &compute_properties);
    if (result != ZE_RESULT_SUCCESS) return "zeDeviceGetComputeProperties: " + result_name(result);
    info->max_group_size = std::max(compute_properties.maxTotalGroupSize, 1u);
    auto compute = std::find_if(groups.begin(), groups.end(), [](const auto& g) {
      return (g.flags & ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE) != 0;
    });
    if (compute == groups.end()) return "no command queue group computes";
    info->compute_ordinal = uint32_t(compute - groups.begin());
    info->fp64 = (module.flags & ZE_DEVICE_MODULE_FLAG_FP64) != 0;
    info->ns_per_tick = device.timerResolution != 0 ? double(device.timerResolution) : 1.0;
    info->timestamp_mask = device.timestampValidBits >= 64 || device.timestampValidBits == 0
                               ? ~0ull
                               : (1ull << device.timestampValidBits) - 1;
    oar_device_properties_t& p = info->properties;
    p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    sdk::copy_text(p.name, device.name);
    char vendor[32];
    std::snprintf(vendor, sizeof vendor, "PCI vendor 0x%04x", device.vendorId);
    sdk::copy_text(p.vendor, device.vendorId == 0x8086 ? std::string("Intel") : vendor);
    sdk::copy_text(p.driver_version, version);
    p.kind = device.type == ZE_DEVICE_TYPE_GPU   ? OAR_DEVICE_KIND_GPU
             : device.type == ZE_DEVICE_TYPE_CPU ? OAR_DEVICE_KIND_CPU
             : device.type == ZE_DEVICE_TYPE_VPU ? OAR_DEVICE_KIND_ACCELERATOR
                                                 : OAR_DEVICE_KIND_OTHER;
    p.dlpack_device_type = kDLOneAPI;
    p.total_memory = total;
    p.max_allocation_size = device.maxMemAllocSize;
    p.min_alignment = kAlignment;
    p.memory_kinds = OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED | OAR_MEMORY_KIND_UNIFIED;
    // The operators registered have kernels for f16 and bf16 (stored as 16
    // bits, computed in f32, as in the opencl plugin) and f64 where the
    // device has it.
    p.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16;
    if (info->fp64) p.dtypes |= OAR_DTYPE_SUPPORT_F64;
    p.native_dtypes =
        ((module.flags & ZE_DEVICE_MODULE_FLAG_FP16) ? uint32_t(OAR_DTYPE_SUPPORT_F16) : 0u) |
        (info->fp64 ? uint32_t(OAR_DTYPE_SUPPORT_F64) : 0u);
    p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
                 OAR_DEVICE_FEATURE_HOST_CALLBACKS;
    p.compute_units = device.numSlices * device.numSubslicesPerSlice * device.numEUsPerSubslice;
    return "";
  }

  void require_index(int32_t index) const {
    sdk::require(index >= 0 && size_t(index) < devices_.size(), OAR_STATUS_OUT_OF_RANGE,
                 "device index " + std::to_string(index) + " is out of range (" +
                     std::to_string(devices_.size()) + " device(s))");
  }

  Loader ze_;  // first member: closed last
  std::vector<std::unique_ptr<DeviceInfo>> devices_;
  std::mutex mutex_;
  std::unordered_set<oar_device_s*> open_;
  std::mutex graveyard_mutex_;
  std::vector<std::shared_ptr<Point>> graveyard_;  // points retired before they completed
  sdk::AllocationTable allocations_{"level_zero", sdk::AllocationTable::Unknown::kRefuse};
  LevelZeroBackend backend_{this};  // of the registered operators (called until finalize)
};

opencl::DeviceTraits LevelZeroBackend::traits(const oar_kernel_call_t& call) const {
  return plugin_->traits(call);
}
void LevelZeroBackend::check_view(const oar_kernel_call_t& call, opencl::Buffer memory,
                                  const sdk::ByteSpan& span, const char* what) const {
  plugin_->check_view(call, memory, span, what);
}
opencl::Buffer LevelZeroBackend::error_flag(const oar_kernel_call_t& call) const {
  return plugin_->error_flag(call);
}
void LevelZeroBackend::launch_1d(const oar_kernel_call_t& call, const opencl::KernelName& kernel,
                                 int64_t global, std::initializer_list<opencl::KArg> args) const {
  plugin_->launch_1d(call, kernel, global, args);
}
void LevelZeroBackend::launch_nd(const oar_kernel_call_t& call, const opencl::KernelName& kernel,
                                 uint32_t dims, const size_t* global, const size_t* local,
                                 std::initializer_list<opencl::KArg> args) const {
  plugin_->launch_nd(call, kernel, dims, global, local, args);
}
void LevelZeroBackend::fill(const oar_kernel_call_t& call, opencl::Buffer memory, uint64_t offset,
                            const void* pattern, size_t pattern_size, uint64_t bytes) const {
  plugin_->fill(call, memory, offset, pattern, pattern_size, bytes);
}
void LevelZeroBackend::copy(const oar_kernel_call_t& call, opencl::Buffer from,
                            uint64_t from_offset, opencl::Buffer to, uint64_t to_offset,
                            uint64_t bytes) const {
  plugin_->copy_on(call, from, from_offset, to, to_offset, bytes);
}

}  // namespace oar::level_zero

OAR_PLUGIN_DEFINE(oar::level_zero::LevelZeroPlugin, OAR_PLUGIN_NAME, "0.1.0", "OAR project")
