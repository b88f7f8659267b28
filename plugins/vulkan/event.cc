// Events: a record is the stream's timeline semaphore and its value after the
// work so far, so query, synchronize and cross-stream waits are semaphore
// operations. Timing events also write a timestamp query at the record.
#include <string>

#include "vulkan.h"

namespace oar::vulkan {

void destroy_event(oar_event_t event) {
  if (event->timestamps != VK_NULL_HANDLE)
    vk.DestroyQueryPool(event->device->device, event->timestamps, nullptr);
  delete event;
}

void VulkanPlugin::event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
  require_not_null(device, "device");
  require_not_null(out_event, "out_event");
  oar::sdk::check_event_flags(flags, device->physical->timestamps,
                              "this device's compute queue has no timestamps");
  auto event = std::make_unique<oar_event_s>();
  event->device = device;
  event->flags = flags;
  if (flags & OAR_EVENT_FLAG_TIMING) {
    VkQueryPoolCreateInfo info{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
    info.queryType = VK_QUERY_TYPE_TIMESTAMP;
    info.queryCount = 1;
    check(vk.CreateQueryPool(device->device, &info, nullptr, &event->timestamps),
          "vkCreateQueryPool");
  }
  std::lock_guard<std::mutex> lock(device->mutex);
  device->events.insert(event.get());
  *out_event = event.release();
}

void VulkanPlugin::event_destroy(oar_event_t event) {
  if (event == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(event->device->mutex);
    event->device->events.erase(event);
  }
  std::shared_ptr<Timeline> timeline;
  uint64_t value = 0;
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    timeline = event->timeline;
    value = event->value;
  }
  // Queued work may still write the timestamp: then its stream frees the
  // query pool once that work is done (destroy must not wait, e.g. for work
  // held behind a host callback).
  if (event->timestamps != VK_NULL_HANDLE && timeline != nullptr && timeline->completed() < value) {
    std::lock_guard<std::mutex> lock(timeline->mutex);
    timeline->retired_queries.emplace_back(value, event->timestamps);
    timeline->retired_count.store(timeline->retired_queries.size());
    event->timestamps = VK_NULL_HANDLE;
  }
  destroy_event(event);
}

void VulkanPlugin::event_record(oar_event_t event, oar_stream_t stream) {
  require_not_null(event, "event");
  require_not_null(stream, "stream");
  oar::sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                    "event_record: the event and the stream belong to different devices");
  std::lock_guard<std::mutex> lock(stream->mutex);
  if (event->timestamps != VK_NULL_HANDLE) {
    VkQueryPool pool = event->timestamps;
    stream->record_locked(0, [pool](Batch& batch, uint32_t) {
      vk.CmdResetQueryPool(batch.commands, pool, 0, 1);
      vk.CmdWriteTimestamp(batch.commands, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, pool, 0);
    });
  }
  stream->flush_locked();
  std::lock_guard<std::mutex> event_lock(event->mutex);
  event->timeline = stream->timeline;
  event->value = stream->last_value;
}

namespace {

// The event's record, or null if never recorded.
std::shared_ptr<Timeline> latest(oar_event_t event, uint64_t* value) {
  std::lock_guard<std::mutex> lock(event->mutex);
  *value = event->value;
  return event->timeline;
}

}  // namespace

void VulkanPlugin::event_query(oar_event_t event, bool* out_done) {
  require_not_null(event, "event");
  require_not_null(out_done, "out_done");
  uint64_t value = 0;
  std::shared_ptr<Timeline> timeline = latest(event, &value);
  bool done = timeline == nullptr || timeline->completed() >= value;
  if (done && timeline != nullptr) timeline->throw_if_failed(value);
  *out_done = done;
}

void VulkanPlugin::event_synchronize(oar_event_t event) {
  require_not_null(event, "event");
  uint64_t value = 0;
  std::shared_ptr<Timeline> timeline = latest(event, &value);
  if (timeline == nullptr) return;
  timeline->wait_polling_first(value);
  timeline->throw_if_failed(value);
}

void VulkanPlugin::event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
  require_not_null(start, "start");
  require_not_null(end, "end");
  require_not_null(out_ms, "out_ms");
  oar::sdk::require(start->device == end->device, OAR_STATUS_INVALID_ARGUMENT,
                    "event_elapsed_ms: the events belong to different devices");
  oar::sdk::require((start->flags & end->flags & OAR_EVENT_FLAG_TIMING) != 0,
                    OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must be created with OAR_EVENT_FLAG_TIMING");
  uint64_t first_value = 0, second_value = 0;
  std::shared_ptr<Timeline> first = latest(start, &first_value);
  std::shared_ptr<Timeline> second = latest(end, &second_value);
  oar::sdk::require(first != nullptr && second != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must have been recorded");
  oar::sdk::require(first->completed() >= first_value && second->completed() >= second_value,
                    OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must be complete");
  uint64_t ticks[2] = {0, 0};
  check(vk.GetQueryPoolResults(start->device->device, start->timestamps, 0, 1, sizeof(uint64_t),
                               &ticks[0], sizeof(uint64_t), VK_QUERY_RESULT_64_BIT),
        "vkGetQueryPoolResults");
  check(vk.GetQueryPoolResults(end->device->device, end->timestamps, 0, 1, sizeof(uint64_t),
                               &ticks[1], sizeof(uint64_t), VK_QUERY_RESULT_64_BIT),
        "vkGetQueryPoolResults");
  double period_ns = start->device->physical->properties.limits.timestampPeriod;
  // Signed: |end| may have completed before |start| (recorded on two streams).
  double ns = (double(ticks[1]) - double(ticks[0])) * period_ns;
  *out_ms = float(ns / 1e6);
}

}  // namespace oar::vulkan
