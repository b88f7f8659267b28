#include "oar/sdk/queue_streams.hpp"

#include <system_error>
#include <utility>
#include <vector>

#include "oar/sdk/plugin.hpp"

namespace oar::sdk {

QueueStreams::QueueStreams(std::string thread_prefix) : thread_prefix_(std::move(thread_prefix)) {}

QueueStreams::~QueueStreams() {
  std::vector<oar_device_t> devices;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [device, objects] : devices_) devices.push_back(device);
  }
  for (oar_device_t device : devices) release_device(device);
}

TaskWrapper QueueStreams::task_wrapper(oar_device_t device) {
  (void)device;
  return nullptr;
}

void QueueStreams::submit(oar_stream_t stream, std::function<void()> work, TaskInfo info) {
  require_not_null(stream, "stream");
  stream->queue->submit(std::move(work), info);
}

size_t QueueStreams::release_device(oar_device_t device) {
  Objects objects;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = devices_.find(device);
    if (it == devices_.end()) return 0;
    objects = std::move(it->second);
    devices_.erase(it);
  }
  const size_t count = objects.streams.size() + objects.events.size();
  if (count != 0) {
    log(OAR_LOG_LEVEL_WARNING, "device closed with " + std::to_string(objects.streams.size()) +
                                   " stream(s) and " + std::to_string(objects.events.size()) +
                                   " event(s) still alive; releasing them");
  }
  for (oar_event_s* event : objects.events) delete event;
  // A queue drains when its last reference goes: its pending work runs now,
  // before the plugin frees the memory that work may touch.
  for (auto& [stream, queue] : objects.streams) delete stream;
  objects.streams.clear();
  return count;
}

void QueueStreams::device_synchronize(oar_device_t device) {
  require_not_null(device, "device");
  std::vector<std::shared_ptr<WorkQueue>> queues;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = devices_.find(device);
    if (it != devices_.end()) {
      for (auto& [stream, queue] : it->second.streams) queues.push_back(queue);
    }
  }
  // Wait for all of them before reporting, so that the device really is idle
  // when the first error comes back.
  QueueStatus first;
  for (auto& queue : queues) {
    QueueStatus status = queue->synchronize();
    if (first.ok() && !status.ok()) first = std::move(status);
  }
  first.throw_if_error();
}

void QueueStreams::stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                                 oar_stream_t* out_stream) {
  require_not_null(device, "device");
  require_not_null(out_stream, "out_stream");
  check_stream_desc(desc);
  // The priority is a hint; one worker per stream leaves the OS scheduler in
  // charge.
  auto stream = std::make_unique<oar_stream_s>();
  stream->device = device;
  try {
    stream->queue = std::make_shared<WorkQueue>(thread_prefix_ + std::to_string(next_stream_id_++),
                                                task_wrapper(device), queue_options_);
  } catch (const std::system_error& e) {
    // Each stream is a thread; running out of threads is running out of streams.
    throw Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                std::string("stream_create: cannot start a worker thread: ") + e.what());
  }
  std::lock_guard<std::mutex> lock(mutex_);
  devices_[device].streams.emplace(stream.get(), stream->queue);
  *out_stream = stream.release();
}

void QueueStreams::stream_destroy(oar_stream_t stream) {
  if (stream == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = devices_.find(stream->device);
    if (it != devices_.end()) it->second.streams.erase(stream);
  }
  // Drain here rather than rely on the queue's destructor: a concurrent
  // device_synchronize may hold the last reference, and the ABI promises the
  // work is done when destroy returns. A pending error is dropped.
  stream->queue->synchronize();
  delete stream;
}

void QueueStreams::stream_synchronize(oar_stream_t stream) {
  require_not_null(stream, "stream");
  stream->queue->synchronize().throw_if_error();
}

void QueueStreams::stream_query(oar_stream_t stream, bool* out_idle) {
  require_not_null(stream, "stream");
  require_not_null(out_idle, "out_idle");
  bool idle = false;
  stream->queue->query(&idle).throw_if_error();
  *out_idle = idle;
}

void QueueStreams::stream_wait_event(oar_stream_t stream, oar_event_t event) {
  require_not_null(stream, "stream");
  require_not_null(event, "event");
  std::shared_ptr<Marker> record = event->latest();
  require(record != nullptr, OAR_STATUS_FAILED_PRECONDITION,
          "stream_wait_event: the event was never recorded");
  stream->queue->submit_wait(std::move(record));
}

void QueueStreams::stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                            void* user_data) {
  require_not_null(stream, "stream");
  require_not_null(callback, "stream_add_host_callback: callback");
  stream->queue->submit_observer(
      [callback, user_data](const QueueStatus& status) { callback(user_data, status.code); });
}

void QueueStreams::event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
  require_not_null(device, "device");
  require_not_null(out_event, "out_event");
  check_event_flags(flags, /*timing_supported=*/true);
  auto event = std::make_unique<oar_event_s>();
  event->device = device;
  event->flags = flags;
  std::lock_guard<std::mutex> lock(mutex_);
  devices_[device].events.insert(event.get());
  *out_event = event.release();
}

void QueueStreams::event_destroy(oar_event_t event) {
  if (event == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = devices_.find(event->device);
    if (it != devices_.end()) it->second.events.erase(event);
  }
  // Pending markers are shared with their queues, which complete them anyway.
  delete event;
}

void QueueStreams::event_record(oar_event_t event, oar_stream_t stream) {
  require_not_null(event, "event");
  require_not_null(stream, "stream");
  require(event->device == stream->device, OAR_STATUS_INVALID_ARGUMENT,
          "event_record: the event and the stream belong to different devices");
  auto record = std::make_shared<Marker>();
  // Replace first, then submit: a query from another thread that sees the new
  // record before the queue completes it rightly reports "not done".
  {
    std::lock_guard<std::mutex> lock(event->mutex);
    event->record = record;
  }
  stream->queue->submit_marker(std::move(record));
}

void QueueStreams::event_query(oar_event_t event, bool* out_done) {
  require_not_null(event, "event");
  require_not_null(out_done, "out_done");
  std::shared_ptr<Marker> record = event->latest();
  bool done = true;  // never recorded counts as complete
  if (record != nullptr) record->query(&done).throw_if_error();
  *out_done = done;
}

void QueueStreams::event_synchronize(oar_event_t event) {
  require_not_null(event, "event");
  std::shared_ptr<Marker> record = event->latest();
  if (record != nullptr) record->wait().throw_if_error();
}

void QueueStreams::event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
  require_not_null(start, "start");
  require_not_null(end, "end");
  require_not_null(out_ms, "out_ms");
  require(start->device == end->device, OAR_STATUS_INVALID_ARGUMENT,
          "event_elapsed_ms: the events belong to different devices");
  require((start->flags & end->flags & OAR_EVENT_FLAG_TIMING) != 0, OAR_STATUS_FAILED_PRECONDITION,
          "event_elapsed_ms: both events must be created with OAR_EVENT_FLAG_TIMING");
  std::shared_ptr<Marker> first = start->latest();
  std::shared_ptr<Marker> second = end->latest();
  require(first != nullptr && second != nullptr, OAR_STATUS_FAILED_PRECONDITION,
          "event_elapsed_ms: both events must have been recorded");
  bool first_done = false;
  bool second_done = false;
  first->query(&first_done).throw_if_error();
  second->query(&second_done).throw_if_error();
  require(first_done && second_done, OAR_STATUS_FAILED_PRECONDITION,
          "event_elapsed_ms: both events must be complete");
  // Signed: |end| may have completed before |start| (recorded on two streams).
  double ns =
      static_cast<double>(second->timestamp_ns()) - static_cast<double>(first->timestamp_ns());
  *out_ms = static_cast<float>(ns / 1e6);
}

}  // namespace oar::sdk
