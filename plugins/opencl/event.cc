// Events: each record is a point of its stream (a marker command); recording
// again replaces the point, so a stream still waiting on the previous one is
// not disturbed. Timing comes from the points' profiling timestamps.
#include <chrono>
#include <string>

#include "opencl.h"

namespace oar::opencl {
namespace {

// True when |record| completed; throws the error of the work before it.
bool completed(const Record& record) {
  cl_int execution = CL_QUEUED;
  check(cl().clGetEventInfo(record.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof(execution),
                            &execution, nullptr),
        "clGetEventInfo(CL_EVENT_COMMAND_EXECUTION_STATUS)");
  if (execution != CL_COMPLETE && execution >= 0) return false;
  oar_status_t status = record.status_after_completion();
  oar::sdk::require(status == OAR_STATUS_OK, status,
                    "work on the stream before this event failed (" +
                        std::string(status == OAR_STATUS_OUT_OF_RANGE ? "an index out of range"
                                                                      : "a device error") +
                        ")");
  return true;
}

}  // namespace

void OpenclPlugin::event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
  require_not_null(device, "device");
  require_not_null(out_event, "out_event");
  oar::sdk::check_event_flags(flags, device->physical->profiling,
                              "the device's queues do not support profiling");
  auto event = std::make_unique<oar_event_s>();
  event->waits.set_retry_stale_loser(true);  // as a stream's (stream.cc)
  event->device = device;
  event->flags = flags;
  std::lock_guard<std::mutex> lock(device->mutex);
  device->events.insert(event.get());
  *out_event = event.release();
}

void OpenclPlugin::event_destroy(oar_event_t event) {
  if (event == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(event->device->mutex);
    event->device->events.erase(event);
  }
  delete event;
}

void OpenclPlugin::event_record(oar_event_t event, oar_stream_t stream) {
  require_not_null(event, "event");
  require_not_null(stream, "stream");
  oar::sdk::require(event->device->physical == stream->device->physical,
                    OAR_STATUS_INVALID_ARGUMENT,
                    "event_record: the event and the stream belong to different devices");
  std::shared_ptr<Record> record = enqueue_point(stream);
  std::lock_guard<std::mutex> lock(event->mutex);
  event->record = std::move(record);
}

void OpenclPlugin::event_query(oar_event_t event, bool* out_done) {
  require_not_null(event, "event");
  require_not_null(out_done, "out_done");
  std::shared_ptr<Record> record = event->latest();
  bool done = record == nullptr || completed(*record);  // never recorded counts as complete
  *out_done = done;
}

void OpenclPlugin::event_synchronize(oar_event_t event) {
  require_not_null(event, "event");
  std::shared_ptr<Record> record = event->latest();
  if (record == nullptr) return;
  const auto start = std::chrono::steady_clock::now();
  if (event->waits.should_poll()) event->waits.poll([&] { return record->completed(); });
  check(cl().clWaitForEvents(1, &record->event), "clWaitForEvents");
  event->waits.finished(start);
  completed(*record);
}

void OpenclPlugin::event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
  require_not_null(start, "start");
  require_not_null(end, "end");
  require_not_null(out_ms, "out_ms");
  oar::sdk::require(start->device->physical == end->device->physical, OAR_STATUS_INVALID_ARGUMENT,
                    "event_elapsed_ms: the events belong to different devices");
  oar::sdk::require((start->flags & end->flags & OAR_EVENT_FLAG_TIMING) != 0,
                    OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must be created with OAR_EVENT_FLAG_TIMING");
  std::shared_ptr<Record> first = start->latest();
  std::shared_ptr<Record> second = end->latest();
  oar::sdk::require(first != nullptr && second != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must have been recorded");
  oar::sdk::require(completed(*first) && completed(*second), OAR_STATUS_FAILED_PRECONDITION,
                    "event_elapsed_ms: both events must be complete");
  cl_ulong t0 = 0;
  cl_ulong t1 = 0;
  check(cl().clGetEventProfilingInfo(first->event, CL_PROFILING_COMMAND_END, sizeof(t0), &t0,
                                     nullptr),
        "clGetEventProfilingInfo(start)");
  check(cl().clGetEventProfilingInfo(second->event, CL_PROFILING_COMMAND_END, sizeof(t1), &t1,
                                     nullptr),
        "clGetEventProfilingInfo(end)");
  // Signed: |end| may have completed before |start| (recorded on two streams).
  *out_ms = static_cast<float>((static_cast<double>(t1) - static_cast<double>(t0)) / 1e6);
}

}  // namespace oar::opencl
