// Events: each record is a fresh Marker, so re-recording never disturbs a
// stream still waiting on the previous record.
#include <string>

#include "cpu.h"

namespace oar::cpu {

void CpuPlugin::event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
  require_not_null(device, "device");
  require_not_null(out_event, "out_event");
  oar::sdk::check_event_flags(flags, /*timing_supported=*/true);
  auto event = std::make_unique<oar_event_s>();
  event->device = device;
  event->flags = flags;
  std::lock_guard<std::mutex> lock(device->mutex);
  device->events.insert(event.get());
  *out_event = event.release();
}

void CpuPlugin::event_destroy(oar_event_t event) {
  if (event == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(event->device->mutex);
    event->device->events.erase(event);
  }
  // Pending markers are shared with their queues, which complete them anyway.
  delete event;
}

void CpuPlugin::event_record(oar_event_t event, oar_stream_t stream) {
  require_not_null(event, "event");
  require_not_null(stream, "stream");
  oar::sdk::require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
                    "event_record: the event and the stream belong to different devices");
  auto record = std::make_shared<oar::plugin::Marker>();
  // Replace first, then submit: a query from another thread that sees the new
  // record before the queue completes it rightly reports "not done".
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    event->record = record;
  }
  stream->queue->submit_marker(std::move(record));
}

void CpuPlugin::event_query(oar_event_t event, bool* out_done) {
  require_not_null(event, "event");
  require_not_null(out_done, "out_done");
  std::shared_ptr<oar::plugin::Marker> record = event->latest();
  bool done = true;  // never recorded counts as complete
  if (record != nullptr) record->query(&done).throw_if_error();
  *out_done = done;
}

void CpuPlugin::event_synchronize(oar_event_t event) {
  require_not_null(event, "event");
  std::shared_ptr<oar::plugin::Marker> record = event->latest();
  if (record != nullptr) record->wait().throw_if_error();
}

void CpuPlugin::event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
  require_not_null(start, "start");
  require_not_null(end, "end");
  require_not_null(out_ms, "out_ms");
  oar::sdk::require(start->device == end->device, OAR_STATUS_INVALID_ARGUMENT,
                    "event_elapsed_ms: the events belong to different devices");
  oar::sdk::require((start->flags & end->flags & OAR_EVENT_FLAG_TIMING) != 0,
                    OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must be created with OAR_EVENT_FLAG_TIMING");
  std::shared_ptr<oar::plugin::Marker> first = start->latest();
  std::shared_ptr<oar::plugin::Marker> second = end->latest();
  oar::sdk::require(first != nullptr && second != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must have been recorded");
  bool first_done = false;
  bool second_done = false;
  first->query(&first_done).throw_if_error();
  second->query(&second_done).throw_if_error();
  oar::sdk::require(first_done && second_done, OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must be complete");
  // Signed: |end| may have completed before |start| (recorded on two streams).
  double ns =
      static_cast<double>(second->timestamp_ns()) - static_cast<double>(first->timestamp_ns());
  *out_ms = static_cast<float>(ns / 1e6);
}

}  // namespace oar::cpu
