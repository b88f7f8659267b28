// Streams: operations are recorded into one command buffer at a time, which
// is submitted when someone needs its result (synchronize, query, an event, a
// host step) or when it holds kMaxOperations operations: back-to-back ops cost
// one submit per batch, not one per op. Each submitted command buffer and
// each host step (a read back into pageable memory, a host callback) gets the
// next value of the stream's timeline semaphore, so "done up to N" is one
// number that events, cross-stream waits and synchronize share.
//
// Host steps run on a worker thread, in order. Work queued behind a host step
// waits in the same worker FIFO instead of in the device queue: a queue
// submission that waits for a host-signalled value would block every other
// stream sharing the queue (e.g. behind a host callback that waits for them).
#include <algorithm>
#include <chrono>
#include <string>
#include <system_error>

#include "vulkan.h"

namespace oar::vulkan {
namespace {

constexpr uint32_t kMaxOperations = 64;   // per command buffer
constexpr uint32_t kParamsWords = 16384;  // 64 KiB of parameters per command buffer
constexpr size_t kMaxInFlight = 32;       // command buffers before the host waits
constexpr uint64_t kMaxSpareStaging = 128u << 20;

// Orders everything before against everything after, host reads included. A
// global barrier per operation is conservative but correct, and cheap next
// to a dispatch.
void full_barrier(VkCommandBuffer commands, bool to_host) {
  VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  barrier.srcAccessMask =
      VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT |
                          (to_host ? uint32_t(VK_ACCESS_HOST_READ_BIT) : 0u);
  vk.CmdPipelineBarrier(
      commands, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | VK_PIPELINE_STAGE_HOST_BIT,
      VK_PIPELINE_STAGE_ALL_COMMANDS_BIT | (to_host ? uint32_t(VK_PIPELINE_STAGE_HOST_BIT) : 0u), 0,
      1, &barrier, 0, nullptr, 0, nullptr);
}

}  // namespace

// A host wait that sees a timeline value proves the GPU work done, not that
// the driver has let go of the submission: Mesa's common queue (lavapipe)
// releases the semaphore's timeline points on its submit thread after the
// signal, so a semaphore or command pool destroyed right after the wait had
// that thread write into freed memory (SIGSEGV in libvulkan_lvp at shutdown,
// under load). vkQueueWaitIdle returns only once the queue is past every
// earlier submission. Bounded: nothing in the queue waits for the host (work
// behind a host step waits in the worker FIFO).
void wait_queue_idle(oar_device_s* device) {
  std::lock_guard<std::mutex> lock(device->queue_mutex);
  vk.QueueWaitIdle(device->queue);
}

Timeline::~Timeline() {
  // Other streams' submissions may wait on this semaphore too.
  if (semaphore != VK_NULL_HANDLE) wait_queue_idle(device);
  for (auto& [value, pool] : retired_queries) vk.DestroyQueryPool(device->device, pool, nullptr);
  device->destroy_buffer(error_word);
  if (semaphore != VK_NULL_HANDLE) vk.DestroySemaphore(device->device, semaphore, nullptr);
}

uint64_t Timeline::completed() {
  uint64_t value = 0;
  check(vk.GetSemaphoreCounterValue(device->device, semaphore, &value),
        "vkGetSemaphoreCounterValue");
  mark_done(value);
  return value;
}

void Timeline::mark_done(uint64_t value) {
  uint64_t done = known_done.load();
  while (done < value && !known_done.compare_exchange_weak(done, value)) {
  }
}

void Timeline::wait_polling_first(uint64_t value) {
  if (known_done.load() >= value) return;
  // Short work ends before a blocking wait would even sleep.
  const auto start = std::chrono::steady_clock::now();
  if (!waits.should_poll() || !waits.poll([&] { return completed() >= value; })) wait(value);
  waits.finished(start);
}

void Timeline::wait(uint64_t value) {
  if (known_done.load() >= value) return;
  VkSemaphoreWaitInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
  info.semaphoreCount = 1;
  info.pSemaphores = &semaphore;
  info.pValues = &value;
  VkResult result;
  do {
    result = vk.WaitSemaphores(device->device, &info, UINT64_MAX);
  } while (result == VK_TIMEOUT);
  check(result, "vkWaitSemaphores");
  mark_done(value);
}

void Timeline::throw_if_failed(uint64_t value) {
  // Lock-free when the host side has not failed (the common case).
  if (host_error_value.load() <= value) {
    std::lock_guard<std::mutex> lock(mutex);
    throw oar::sdk::Error(host_error, host_error_message);
  }
  // The values in the error word are truncated to 32 bits, like the push constant.
  volatile ErrorWord* word = static_cast<volatile ErrorWord*>(error_word.mapped);
  uint32_t failed = word->first_failed;
  if (failed != UINT32_MAX && failed <= uint32_t(value)) {
    // The record is the first failing invocation's (the stream's work runs
    // in order, so it is the work of the first failed batch).
    static const char* const kNames[] = {"index_select",  "gather",         "embedding",
                                         "cross_entropy", "embedding_grad", "cross_entropy_grad",
                                         "one_hot",       "scatter",        "scatter_add"};
    uint32_t op = word->op;
    std::string name = op >= 1 && op <= 9 ? kNames[op - 1] : "a kernel";
    throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE,
                          name + ": index " + std::to_string(int64_t(word->index)) +
                              " out of range [0, " + std::to_string(int64_t(word->bound)) +
                              "); the stream has failed");
  }
}

void Timeline::free_retired_queries() {
  if (retired_count.load() == 0) return;
  std::lock_guard<std::mutex> lock(mutex);
  if (retired_queries.empty()) return;
  uint64_t done = completed();
  auto keep = retired_queries.begin();
  for (auto& entry : retired_queries) {
    if (entry.first <= done) {
      vk.DestroyQueryPool(device->device, entry.second, nullptr);
    } else {
      *keep++ = entry;
    }
  }
  retired_queries.erase(keep, retired_queries.end());
  retired_count.store(retired_queries.size());
}

void Timeline::fail(uint64_t value, oar_status_t status, const std::string& message) {
  std::lock_guard<std::mutex> lock(mutex);
  if (value >= host_error_value.load()) return;
  host_error = status;
  host_error_message = message;
  host_error_value.store(value);
}

}  // namespace oar::vulkan

using oar::vulkan::Batch;
using oar::vulkan::Buffer;
using oar::vulkan::check;
using oar::vulkan::vk;

oar_stream_s::~oar_stream_s() {
  {
    std::lock_guard<std::mutex> lock(fifo_mutex);
    stopping = true;
  }
  fifo_changed.notify_all();
  if (worker.joinable()) worker.join();
  // Before the command pool, staging and parameter buffers go.
  if (submits.load() > 0) oar::vulkan::wait_queue_idle(device);
  auto release = [this](std::unique_ptr<Batch>& batch) {
    if (!batch) return;
    device->destroy_buffer(batch->params);
    for (Buffer& b : batch->staging) device->destroy_buffer(b);
  };
  release(recording);
  for (auto& batch : in_flight) release(batch);
  for (auto& batch : spare) release(batch);
  for (auto& [size, b] : spare_staging) device->destroy_buffer(b);
  if (pool != VK_NULL_HANDLE) vk.DestroyCommandPool(device->device, pool, nullptr);
}

void oar_stream_s::begin_batch_locked() {
  // Reclaims what the host already knows is done (no driver call), or asks
  // the driver when there is no spare command buffer.
  if (spare.empty() ||
      (!in_flight.empty() && in_flight.front()->value <= timeline->known_done.load())) {
    reclaim_locked();
  }
  // Bound the work in flight: the host waits for the oldest command buffer
  // instead of growing without limit.
  if (spare.empty() && in_flight.size() >= oar::vulkan::kMaxInFlight) {
    timeline->wait(in_flight.front()->value);
    reclaim_locked();
  }
  std::unique_ptr<Batch> batch;
  if (!spare.empty()) {
    batch = std::move(spare.back());
    spare.pop_back();
  } else {
    batch = std::make_unique<Batch>();
    VkCommandBufferAllocateInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    info.commandPool = pool;
    info.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    info.commandBufferCount = 1;
    check(vk.AllocateCommandBuffers(device->device, &info, &batch->commands),
          "vkAllocateCommandBuffers");
    batch->params = device->create_buffer(oar::vulkan::kParamsWords * sizeof(int32_t),
                                          device->host_memory_type);
  }
  // A reused command buffer is reset implicitly here (the pool has
  // VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT), not when it is reclaimed:
  // the reset stays off the synchronize path.
  VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  VkResult result = vk.BeginCommandBuffer(batch->commands, &begin);
  if (result != VK_SUCCESS) {
    spare.push_back(std::move(batch));
    check(result, "vkBeginCommandBuffer");
  }
  batch->value = ++last_value;
  batch->waits = std::move(waits);
  waits.clear();
  recording = std::move(batch);
}

void oar_stream_s::record(uint32_t params_words,
                          oar::vulkan::FunctionRef<void(Batch&, uint32_t)> body) {
  std::lock_guard<std::mutex> lock(mutex);
  record_locked(params_words, body);
}

void oar_stream_s::record_locked(uint32_t params_words,
                                 oar::vulkan::FunctionRef<void(Batch&, uint32_t)> body) {
  if (params_words > oar::vulkan::kParamsWords) {  // no message string per op
    throw oar::sdk::Error(OAR_STATUS_INTERNAL,
                          "a dispatch needs more parameters than a command buffer holds");
  }
  if (recording && recording->params_used + params_words > oar::vulkan::kParamsWords)
    flush_locked();
  if (!recording) begin_batch_locked();
  Batch& batch = *recording;
  uint32_t base = batch.params_used;
  // Between two operations of a command buffer: everything earlier is done
  // and visible. (Earlier batches are ordered by the semaphore wait of the
  // submit.)
  if (batch.operations > 0) oar::vulkan::full_barrier(batch.commands, false);
  body(batch, base);
  batch.params_used += params_words;
  ++batch.operations;
  ++operations;
  if (batch.operations >= oar::vulkan::kMaxOperations) flush_locked();
}

void oar_stream_s::flush_locked() {
  if (!recording) return;
  Batch* batch = recording.get();
  // Later batches are ordered by their semaphore wait; only the host needs a
  // barrier to see what this one wrote.
  if (batch->host_reads) oar::vulkan::full_barrier(batch->commands, true);
  VkResult result = vk.EndCommandBuffer(batch->commands);
  in_flight.push_back(std::move(recording));
  if (result != VK_SUCCESS) {
    // The value must still be reached, or every waiter would hang: the worker
    // signals it on the host, as a failed step.
    timeline->fail(batch->value, oar::vulkan::status_of(result),
                   oar::vulkan::describe(result, "vkEndCommandBuffer"));
    std::lock_guard<std::mutex> lock(fifo_mutex);
    fifo.push_back(Item{nullptr, batch->value, [](oar_status_t) {}, {}});
    start_worker_locked();
    return;
  }
  std::lock_guard<std::mutex> lock(fifo_mutex);
  bool ready = fifo.empty();
  for (auto& [other, value] : batch->waits) {
    if (!ready) break;
    ready = other->submitted.load() >= value;
  }
  if (ready) {
    submit(*batch);
    return;
  }
  fifo.push_back(Item{batch, 0, nullptr, {}});
  start_worker_locked();
}

void oar_stream_s::submit(Batch& batch) {
  // The waits live on the stack unless there are many (no heap allocation
  // per submit in the common case).
  constexpr size_t kInline = 8;
  const size_t count = batch.waits.size() + 1;
  VkSemaphore inline_semaphores[kInline];
  uint64_t inline_values[kInline];
  VkPipelineStageFlags inline_stages[kInline];
  std::vector<VkSemaphore> heap_semaphores;
  std::vector<uint64_t> heap_values;
  std::vector<VkPipelineStageFlags> heap_stages;
  VkSemaphore* wait_semaphores = inline_semaphores;
  uint64_t* wait_values = inline_values;
  VkPipelineStageFlags* wait_stages = inline_stages;
  if (count > kInline) {
    heap_semaphores.resize(count);
    heap_values.resize(count);
    heap_stages.resize(count);
    wait_semaphores = heap_semaphores.data();
    wait_values = heap_values.data();
    wait_stages = heap_stages.data();
  }
  uint32_t waits_used = 0;
  for (auto& [other, value] : batch.waits) {
    wait_semaphores[waits_used] = other->semaphore;
    wait_values[waits_used] = value;
    wait_stages[waits_used] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    ++waits_used;
  }
  // Stream order: this batch runs after the stream's previous item, whose
  // signal is already submitted (or done). A semaphore wait rather than a
  // barrier at the start of the batch: it costs nothing when the previous
  // work is complete, the common case after a synchronize.
  // |batch| may be reused as soon as its work is done, which can be before
  // vkQueueSubmit returns: nothing below reads it after the submit.
  const uint64_t value = batch.value;
  uint64_t previous = value - 1;
  if (previous > 0) {
    wait_semaphores[waits_used] = timeline->semaphore;
    wait_values[waits_used] = previous;
    wait_stages[waits_used] = VK_PIPELINE_STAGE_ALL_COMMANDS_BIT;
    ++waits_used;
  }
  VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  values.waitSemaphoreValueCount = waits_used;
  values.pWaitSemaphoreValues = wait_values;
  values.signalSemaphoreValueCount = 1;
  values.pSignalSemaphoreValues = &value;
  VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  info.pNext = &values;
  info.waitSemaphoreCount = waits_used;
  info.pWaitSemaphores = wait_semaphores;
  info.pWaitDstStageMask = wait_stages;
  info.commandBufferCount = 1;
  info.pCommandBuffers = &batch.commands;
  info.signalSemaphoreCount = 1;
  info.pSignalSemaphores = &timeline->semaphore;
  VkResult result;
  {
    std::lock_guard<std::mutex> lock(device->queue_mutex);
    result = vk.QueueSubmit(device->queue, 1, &info, VK_NULL_HANDLE);
  }
  ++submits;
  if (result != VK_SUCCESS) {
    timeline->fail(value, oar::vulkan::status_of(result),
                   oar::vulkan::describe(result, "vkQueueSubmit"));
    // Reach the value from the host once the work before it is done.
    timeline->wait(previous);
    VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
    signal.semaphore = timeline->semaphore;
    signal.value = value;
    vk.SignalSemaphore(device->device, &signal);
  }
  uint64_t submitted = timeline->submitted.load();
  while (submitted < value && !timeline->submitted.compare_exchange_weak(submitted, value)) {
  }
}

void oar_stream_s::start_worker_locked() {
  fifo_changed.notify_all();
  if (worker.joinable()) return;
  try {
    worker = std::thread([this] { run_worker(); });
  } catch (const std::system_error& e) {
    throw oar::sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                          std::string("cannot start the stream's host-step thread: ") + e.what());
  }
}

void oar_stream_s::run_worker() {
  for (;;) {
    Item item;
    {
      std::unique_lock<std::mutex> lock(fifo_mutex);
      fifo_changed.wait(lock, [this] { return stopping || !fifo.empty(); });
      if (fifo.empty()) return;
      // The item stays queued while it runs: an empty FIFO means "nothing
      // pending", which lets flush_locked submit directly.
      item.batch = fifo.front().batch;
      // A batch cannot be reused before it is submitted, so its value is
      // read here, not after the submit.
      item.value = item.batch != nullptr ? item.batch->value : fifo.front().value;
      item.step = fifo.front().step;
      item.waits = fifo.front().waits;
    }
    try {
      if (item.batch != nullptr) {
        for (auto& [other, value] : item.batch->waits) other->wait(value);
        std::lock_guard<std::mutex> lock(fifo_mutex);
        submit(*item.batch);
      } else {
        timeline->wait(item.value - 1);
        for (auto& [other, value] : item.waits) other->wait(value);
        oar_status_t status = OAR_STATUS_OK;
        try {
          timeline->throw_if_failed(item.value - 1);
        } catch (const oar::sdk::Error& e) {
          status = e.code();
        }
        if (item.step) item.step(status);
        VkSemaphoreSignalInfo signal{VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO};
        signal.semaphore = timeline->semaphore;
        signal.value = item.value;
        check(vk.SignalSemaphore(device->device, &signal), "vkSignalSemaphore");
        uint64_t previous = timeline->submitted.load();
        while (previous < item.value &&
               !timeline->submitted.compare_exchange_weak(previous, item.value)) {
        }
      }
    } catch (const oar::sdk::Error& e) {
      oar::sdk::log(OAR_LOG_LEVEL_ERROR, std::string("vulkan stream worker: ") + e.what());
      timeline->fail(item.value, e.code(), e.what());
    }
    std::lock_guard<std::mutex> lock(fifo_mutex);
    fifo.pop_front();
  }
}

void oar_stream_s::add_host_step_locked(std::function<void(oar_status_t)> step) {
  flush_locked();
  uint64_t value = ++last_value;
  std::lock_guard<std::mutex> lock(fifo_mutex);
  fifo.push_back(Item{nullptr, value, std::move(step), std::move(waits)});
  waits.clear();
  start_worker_locked();
}

Buffer& oar_stream_s::staging(Batch& batch, uint64_t size) {
  auto it = spare_staging.lower_bound(size);
  // Reuse a spare buffer unless it is much larger than needed.
  if (it != spare_staging.end() && it->first <= 2 * size + (1u << 20)) {
    batch.staging.push_back(it->second);
    spare_staging_bytes -= it->first;
    spare_staging.erase(it);
  } else {
    uint64_t rounded = 64u << 10;
    while (rounded < size) rounded *= 2;
    batch.staging.push_back(device->create_buffer(rounded, device->host_memory_type));
  }
  return batch.staging.back();
}

void oar_stream_s::reclaim_locked() {
  timeline->free_retired_queries();
  if (in_flight.empty()) return;
  uint64_t done = timeline->known_done.load();
  if (in_flight.front()->value > done) done = timeline->completed();
  while (!in_flight.empty() && in_flight.front()->value <= done) {
    std::unique_ptr<Batch> batch = std::move(in_flight.front());
    in_flight.pop_front();
    for (Buffer& b : batch->staging) {
      if (spare_staging_bytes + b.size <= oar::vulkan::kMaxSpareStaging) {
        spare_staging_bytes += b.size;
        spare_staging.emplace(b.size, b);
      } else {
        device->destroy_buffer(b);
      }
    }
    batch->staging.clear();
    batch->waits.clear();
    batch->params_used = 0;
    batch->operations = 0;
    batch->host_reads = false;
    batch->bound_pipeline = VK_NULL_HANDLE;
    batch->pushed_mask = 0;
    spare.push_back(std::move(batch));
  }
}

void oar_stream_s::synchronize() {
  uint64_t target;
  {
    std::lock_guard<std::mutex> lock(mutex);
    flush_locked();
    target = last_value;
  }
  // Nothing but the error check after the wait: the finished command buffers
  // are reclaimed when the next one is begun.
  timeline->wait_polling_first(target);
  timeline->throw_if_failed(target);
}

bool oar_stream_s::idle() {
  std::lock_guard<std::mutex> lock(mutex);
  flush_locked();
  reclaim_locked();
  uint64_t done = timeline->completed();
  timeline->throw_if_failed(std::min(done, last_value));
  return done >= last_value;
}

namespace oar::vulkan {

void destroy_stream(std::shared_ptr<oar_stream_s> stream) {
  try {
    stream->synchronize();
  } catch (const oar::sdk::Error&) {
    // The ABI drops a pending asynchronous error at destroy.
  }
  oar::sdk::log(OAR_LOG_LEVEL_DEBUG, "vulkan stream: " + std::to_string(stream->operations) +
                                         " operations in " +
                                         std::to_string(stream->submits.load()) + " submits");
  // The last reference (this one, or a device_synchronize's) frees it.
}

void VulkanPlugin::stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                                 oar_stream_t* out_stream) {
  require_not_null(device, "device");
  require_not_null(out_stream, "out_stream");
  oar::sdk::check_stream_desc(desc);
  // The priority is a hint; all streams share the device's one queue.
  auto stream = std::make_unique<oar_stream_s>();
  stream->device = device;
  auto timeline = std::make_shared<Timeline>();
  timeline->device = device;
  VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  type.initialValue = 0;
  VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  info.pNext = &type;
  check(vk.CreateSemaphore(device->device, &info, nullptr, &timeline->semaphore),
        "vkCreateSemaphore (timeline)");
  timeline->error_word = device->create_buffer(sizeof(ErrorWord), device->host_memory_type);
  *static_cast<ErrorWord*>(timeline->error_word.mapped) = ErrorWord{UINT32_MAX, 0, 0, 0};
  stream->timeline = std::move(timeline);
  VkCommandPoolCreateInfo pool{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
  pool.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pool.queueFamilyIndex = device->physical->queue_family;
  check(vk.CreateCommandPool(device->device, &pool, nullptr, &stream->pool), "vkCreateCommandPool");
  std::shared_ptr<oar_stream_s> shared(std::move(stream));
  std::lock_guard<std::mutex> lock(device->mutex);
  device->streams.emplace(shared.get(), shared);
  *out_stream = shared.get();
}

void VulkanPlugin::stream_destroy(oar_stream_t stream) {
  if (stream == nullptr) return;
  std::shared_ptr<oar_stream_s> owned;
  {
    std::lock_guard<std::mutex> lock(stream->device->mutex);
    auto it = stream->device->streams.find(stream);
    oar::sdk::require(it != stream->device->streams.end(), OAR_STATUS_INVALID_ARGUMENT,
                      "stream_destroy: not a live stream of this vulkan device");
    owned = std::move(it->second);
    stream->device->streams.erase(it);
  }
  destroy_stream(std::move(owned));
}

void VulkanPlugin::stream_synchronize(oar_stream_t stream) {
  require_not_null(stream, "stream");
  stream->synchronize();
}

void VulkanPlugin::stream_query(oar_stream_t stream, bool* out_idle) {
  require_not_null(stream, "stream");
  require_not_null(out_idle, "out_idle");
  bool idle = stream->idle();
  *out_idle = idle;
}

void VulkanPlugin::stream_wait_event(oar_stream_t stream, oar_event_t event) {
  require_not_null(stream, "stream");
  require_not_null(event, "event");
  std::shared_ptr<Timeline> timeline;
  uint64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    timeline = event->timeline;
    value = event->value;
  }
  oar::sdk::require(timeline != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                    "stream_wait_event: the event was never recorded");
  oar::sdk::require(timeline->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                    "stream_wait_event: the event belongs to another device");
  // The stream's own order already covers its own events.
  if (timeline == stream->timeline || timeline->completed() >= value) return;
  std::lock_guard<std::mutex> lock(stream->mutex);
  // Work recorded before the wait must not wait: it goes out first.
  stream->flush_locked();
  stream->waits.emplace_back(std::move(timeline), value);
}

void VulkanPlugin::stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                            void* user_data) {
  require_not_null(stream, "stream");
  oar::sdk::require(callback != nullptr, OAR_STATUS_INVALID_ARGUMENT,
                    "stream_add_host_callback: callback is NULL");
  std::lock_guard<std::mutex> lock(stream->mutex);
  stream->add_host_step_locked(
      [callback, user_data](oar_status_t status) { callback(user_data, status); });
}

}  // namespace oar::vulkan
