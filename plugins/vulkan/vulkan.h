// The vulkan plugin: each physical device with a compute queue is an OAR
// device. Memory is a VkBuffer over its own VkDeviceMemory (an oar_memory_t is
// that buffer, addressed with byte offsets), a stream records operations into
// a command buffer that it submits in batches and tracks with a timeline
// semaphore, events are (timeline, value) pairs, kernels are compute
// pipelines over SPIR-V embedded at build time.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "error.h"
#include "loader.h"
#include "oar/oar.h"
#include "oar/sdk/host_wait.hpp"
#include "oar/sdk/plugin.hpp"

namespace oar::vulkan {

// A non-owning reference to a callable, for the per-operation recording
// callbacks: unlike std::function it never allocates.
template <typename Signature>
class FunctionRef;
template <typename R, typename... Args>
class FunctionRef<R(Args...)> {
 public:
  template <typename F,
            typename = std::enable_if_t<!std::is_same<std::decay_t<F>, FunctionRef>::value>>
  FunctionRef(F&& f)  // NOLINT: implicit, like std::function
      : object_(const_cast<void*>(static_cast<const void*>(std::addressof(f)))),
        call_([](void* object, Args... args) -> R {
          return (*static_cast<std::remove_reference_t<F>*>(object))(std::forward<Args>(args)...);
        }) {}
  R operator()(Args... args) const { return call_(object_, std::forward<Args>(args)...); }

 private:
  void* object_;
  R (*call_)(void*, Args...);
};

// What discovery learnt about one physical device.
struct PhysicalDevice {
  VkPhysicalDevice handle = VK_NULL_HANDLE;
  uint32_t queue_family = 0;
  VkPhysicalDeviceProperties properties{};
  VkPhysicalDeviceMemoryProperties memory{};
  uint32_t subgroup_size = 0;
  // Subgroup broadcasts in compute shaders, subgroups of 8 to 64 (matmul.comp).
  bool subgroup_broadcast = false;
  bool float16 = false;    // shaderFloat16 + storageBuffer16BitAccess: f16 claimed
  bool storage16 = false;  // storageBuffer16BitAccess: bf16 claimed
  bool timestamps = false;
  // Workgroups per dispatch (maxComputeWorkGroupCount[0], at most 65535).
  uint32_t max_groups = 65535;
  // Loop iterations one shader invocation may run: llvmpipe silently ends a
  // loop nest after 65535 turns of its counter (about 21845 of our loop
  // bodies); other drivers have no such limit.
  uint64_t loop_budget = UINT64_MAX;
  oar_device_properties_t oar{};
};

// A buffer with its own memory; mapped when host-visible and coherent (the
// host reads and writes it with no flush or invalidate).
struct Buffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t size = 0;  // bytes usable (the VkBuffer may be larger)
  void* mapped = nullptr;
};

// Pipelines keyed by (module, operation), created on first use; the
// VkPipelineCache behind them persists in the plugin's disk cache.
class Pipelines {
 public:
  Pipelines(VkDevice device, const PhysicalDevice& physical);
  ~Pipelines();
  VkPipeline get(const std::string& module, int32_t op);
  VkPipelineLayout layout() const { return layout_; }

 private:
  VkDevice device_;
  std::string cache_key_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  VkPipelineCache cache_ = VK_NULL_HANDLE;
  size_t loaded_cache_size_ = 0;
  std::mutex mutex_;
  // By module, then operation: a lookup builds no key string.
  struct Module {
    VkShaderModule shader = VK_NULL_HANDLE;
    std::unordered_map<int32_t, VkPipeline> pipelines;
  };
  std::unordered_map<std::string, Module> modules_;
};

// Progress of one stream, shared with the events recorded on it so that they
// outlive the stream: a timeline semaphore whose value N means "the first N
// items (command buffers or host steps) of the stream are done", and the
// stream's error.
// The layout of a timeline's error word (std430, common.glsl's ErrorWord).
struct ErrorWord {
  uint32_t first_failed;  // the lowest failed batch, UINT32_MAX: none
  uint32_t op;            // the first failure's operator code (0: none)
  int64_t index;
  int64_t bound;
};

struct Timeline {
  oar_device_s* device = nullptr;
  VkSemaphore semaphore = VK_NULL_HANDLE;
  // Highest value whose signal is already submitted to the queue or done: a
  // queue may wait on it without waiting for a host step.
  std::atomic<uint64_t> submitted{0};
  // A value the semaphore is known to have reached (a lower bound of
  // completed()): waits and reclaims that it satisfies skip the driver call.
  std::atomic<uint64_t> known_done{0};
  // The GPU side of errors: kernels atomicMin the value of their command
  // buffer into an ErrorWord here when an index is out of range, and the
  // first of them records its operator, index and bound (common.glsl).
  Buffer error_word;
  std::mutex mutex;
  // First failed value on the host side; written under |mutex| after the
  // error it flags, read without it.
  std::atomic<uint64_t> host_error_value{UINT64_MAX};
  oar_status_t host_error = OAR_STATUS_OK;
  std::string host_error_message;
  // Timestamp query pools of destroyed events, freed once the work that
  // writes them (up to the value) is done.
  std::vector<std::pair<uint64_t, VkQueryPool>> retired_queries;
  std::atomic<size_t> retired_count{0};  // retired_queries.size(), read without |mutex|

  ~Timeline();
  // Frees the retired query pools whose work is done.
  void free_retired_queries();
  uint64_t completed();
  // Blocks until the semaphore reaches |value|; throws on device loss.
  void wait(uint64_t value);
  // The same for a caller waiting on a result (stream and event synchronize):
  // polls first, for up to OAR_SYNC_SPIN_US, while such waits have been short
  // (plugins/common/host_wait.h). Waits for capacity or inside the stream's
  // worker block at once.
  void wait_polling_first(uint64_t value);
  oar::sdk::HostWait waits;  // wait_polling_first's history
  // Records that the semaphore has reached |value|.
  void mark_done(uint64_t value);
  // Throws the stream's error if work up to |value| failed.
  void throw_if_failed(uint64_t value);
  void fail(uint64_t value, oar_status_t status, const std::string& message);
};

// One command buffer being recorded or in flight, with what it keeps alive.
struct Batch {
  VkCommandBuffer commands = VK_NULL_HANDLE;
  uint64_t value = 0;
  uint32_t operations = 0;
  Buffer params;             // host-visible parameter block of its dispatches
  uint32_t params_used = 0;  // in int32 words
  // Something in it writes memory the host reads (staging, pinned memory, the
  // error word): it ends with a barrier that makes the writes host-visible.
  bool host_reads = false;
  std::vector<Buffer> staging;
  std::vector<std::pair<std::shared_ptr<Timeline>, uint64_t>> waits;
  // The compute state recorded last in |commands| (dispatch() skips binding
  // the same pipeline or pushing the same descriptors again): the pipeline,
  // and the buffers pushed for the bindings in |pushed_mask| by the last push.
  VkPipeline bound_pipeline = VK_NULL_HANDLE;
  uint32_t pushed_mask = 0;
  VkBuffer pushed[10] = {};
};

}  // namespace oar::vulkan

struct oar_memory_s {
  oar_device_s* device = nullptr;
  oar::vulkan::Buffer buffer;
  uint32_t kind = 0;
};

struct oar_device_s {
  int32_t index = 0;
  const oar::vulkan::PhysicalDevice* physical = nullptr;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  std::mutex queue_mutex;  // vkQueueSubmit needs the queue externally synchronized
  uint32_t device_memory_type = 0;
  uint32_t host_memory_type = 0;
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;
  std::unique_ptr<oar::vulkan::Pipelines> pipelines;
  oar::vulkan::Buffer dummy;  // bound to the slots a shader does not use

  std::mutex mutex;
  // Live streams, shared so that a device_synchronize racing a
  // stream_destroy never touches a freed stream.
  std::unordered_map<oar_stream_s*, std::shared_ptr<oar_stream_s>> streams;
  std::unordered_set<oar_event_s*> events;
  std::unordered_set<oar_memory_s*> allocations;
  std::map<uintptr_t, oar_memory_s*> pinned;  // host address -> pinned allocation
  std::unordered_set<VkBuffer> pinned_buffers;
  std::atomic<size_t> pinned_count{0};
  std::atomic<uint64_t> allocated_bytes{0};

  // Buffer of |size| bytes in memory type |type|, mapped if host-visible and
  // coherent.
  oar::vulkan::Buffer create_buffer(uint64_t size, uint32_t type);
  void destroy_buffer(oar::vulkan::Buffer& buffer);
  // The pinned allocation holding [address, address + size), or nullptr.
  oar_memory_s* find_pinned(const void* address, uint64_t size);
  // Whether |buffer| is a pinned (host-visible) allocation's.
  bool is_pinned(VkBuffer buffer);
  // Throws INVALID_ARGUMENT unless |memory| is a live allocation of this device.
  void require_allocation(oar_memory_s* memory, const char* what);
};

struct oar_stream_s {
  oar_device_s* device = nullptr;
  std::shared_ptr<oar::vulkan::Timeline> timeline;
  VkCommandPool pool = VK_NULL_HANDLE;

  // Thread-compatible operations are still locked: stream_synchronize and
  // stream_query are thread-safe and flush.
  std::mutex mutex;
  uint64_t last_value = 0;  // the value of the last item handed out
  std::unique_ptr<oar::vulkan::Batch> recording;
  std::deque<std::unique_ptr<oar::vulkan::Batch>> in_flight;
  std::vector<std::unique_ptr<oar::vulkan::Batch>> spare;
  std::multimap<uint64_t, oar::vulkan::Buffer> spare_staging;  // by size
  uint64_t spare_staging_bytes = 0;
  std::vector<std::pair<std::shared_ptr<oar::vulkan::Timeline>, uint64_t>> waits;
  // Items that must not reach the queue yet (host steps and what follows
  // them), run in order by a worker thread started on first need.
  struct Item {
    oar::vulkan::Batch* batch = nullptr;  // submit it, or else run |step| as |value|
    uint64_t value = 0;
    std::function<void(oar_status_t)> step;
    std::vector<std::pair<std::shared_ptr<oar::vulkan::Timeline>, uint64_t>> waits;
  };
  std::mutex fifo_mutex;
  std::condition_variable fifo_changed;
  std::deque<Item> fifo;
  bool stopping = false;
  std::thread worker;

  // Statistics, logged at debug level when the stream is destroyed.
  uint64_t operations = 0;
  std::atomic<uint64_t> submits{0};

  ~oar_stream_s();

  // Records one operation: |record| adds commands to the current command
  // buffer, which is created on demand and submitted once it holds enough.
  // |params| words of the batch's parameter block are reserved for it.
  void record(uint32_t params_words,
              oar::vulkan::FunctionRef<void(oar::vulkan::Batch&, uint32_t params_base)> record);
  // The same for a caller that holds |mutex|.
  void record_locked(
      uint32_t params_words,
      oar::vulkan::FunctionRef<void(oar::vulkan::Batch&, uint32_t params_base)> record);
  // Submits the command buffer being recorded, if any. Caller holds |mutex|.
  void flush_locked();
  // Queues a host step after everything so far; |step| gets the stream's
  // status. Caller holds |mutex|.
  void add_host_step_locked(std::function<void(oar_status_t)> step);
  // A host-visible staging buffer of at least |size| bytes, kept alive by
  // |batch|. Caller holds |mutex|.
  oar::vulkan::Buffer& staging(oar::vulkan::Batch& batch, uint64_t size);
  // Blocks until everything submitted is done; throws the stream's error.
  void synchronize();
  bool idle();
  void reclaim_locked();

 private:
  void begin_batch_locked();
  void submit(oar::vulkan::Batch& batch);
  void start_worker_locked();
  void run_worker();
};

struct oar_event_s {
  oar_device_s* device = nullptr;
  uint32_t flags = 0;
  VkQueryPool timestamps = VK_NULL_HANDLE;  // one query, OAR_EVENT_FLAG_TIMING only
  std::mutex mutex;
  std::shared_ptr<oar::vulkan::Timeline> timeline;  // null until recorded
  uint64_t value = 0;
};

namespace oar::vulkan {

class VulkanPlugin {
 public:
  VulkanPlugin();
  ~VulkanPlugin();

  void device_count(int32_t* out_count);
  void device_properties(int32_t index, oar_device_properties_t* out_properties);
  void device_open(int32_t index, oar_device_t* out_device);
  void device_close(oar_device_t device);
  void device_synchronize(oar_device_t device);
  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total);

  void register_kernels(const oar_kernel_registrar_t* registrar);

  void stream_create(oar_device_t device, const oar_stream_desc_t* desc, oar_stream_t* out_stream);
  void stream_destroy(oar_stream_t stream);
  void stream_synchronize(oar_stream_t stream);
  void stream_query(oar_stream_t stream, bool* out_idle);
  void stream_wait_event(oar_stream_t stream, oar_event_t event);
  void stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                void* user_data);

  void event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event);
  void event_destroy(oar_event_t event);
  void event_record(oar_event_t event, oar_stream_t stream);
  void event_query(oar_event_t event, bool* out_done);
  void event_synchronize(oar_event_t event);
  void event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms);

  void memory_allocate(oar_device_t device, uint64_t size, uint32_t kind, oar_memory_t* out_memory);
  void memory_free(oar_device_t device, oar_memory_t memory);
  void memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address);
  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size);
  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size);
  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size);
  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size);

 private:
  VkInstance instance_ = VK_NULL_HANDLE;
  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  std::vector<PhysicalDevice> devices_;
  std::mutex open_mutex_;
  std::unordered_set<oar_device_s*> open_;

  void require_index(int32_t index) const;
  void release_device(oar_device_s* device);
};

// device.cc: the oar_dtype_support_e bits of the arithmetic the device's
// shaders execute natively (oar_device_properties_t.native_dtypes, docs/abi.md
// "Native arithmetic"), from its features; |has_integer_dot_product|: the
// device has VK_KHR_shader_integer_dot_product, so its structs may be queried.
uint32_t native_dtypes(const VkPhysicalDeviceFeatures& features,
                       const VkPhysicalDeviceShaderFloat16Int8Features& float16_int8,
                       const VkPhysicalDeviceShaderIntegerDotProductFeatures& dot,
                       const VkPhysicalDeviceShaderIntegerDotProductProperties& dot_speed);
uint32_t native_dtypes(VkPhysicalDevice handle, bool has_integer_dot_product);

// device.cc: opens |physical| as a logical device.
oar_device_s* open_device(const PhysicalDevice& physical, int32_t index);
void close_device(oar_device_s* device);

// stream.cc / event.cc helpers used across files. destroy_stream drains the
// stream and drops the device's reference to it.
void destroy_stream(std::shared_ptr<oar_stream_s> stream);
// Waits until the queue is past every submission so far (before a semaphore,
// command pool or buffer a submission names is destroyed).
void wait_queue_idle(oar_device_s* device);
void destroy_event(oar_event_s* event);

using oar::sdk::require_not_null;

// Throws OUT_OF_RANGE if [offset, offset + size) leaves |memory|.
void check_range(const oar_memory_s* memory, uint64_t offset, uint64_t size, const char* what);

// A tensor buffer bound to shader binding |slot| (0..7).
struct Binding {
  uint32_t slot;
  VkBuffer buffer;
};

// Records one dispatch of pipeline (|module|, |op|) on |stream| with |count|
// parameter words, enough workgroups for |invocations| (the shaders loop when
// they get fewer), and |tensors| bound; unbound slots get a dummy buffer.
void dispatch(oar_stream_s* stream, const std::string& module, int32_t op,
              const std::vector<Binding>& tensors, const int32_t* params, uint32_t count,
              uint64_t invocations);

// The number of validation-layer messages seen (OAR_VULKAN_VALIDATION=1).
uint64_t validation_messages();

}  // namespace oar::vulkan
