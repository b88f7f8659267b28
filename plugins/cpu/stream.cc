// Streams: each one a WorkQueue with its own worker thread, so that streams
// really run concurrently and a copy returns before the bytes moved.
#include <atomic>
#include <string>
#include <system_error>

#include "cpu.h"

namespace oar::cpu {

void CpuPlugin::stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                              oar_stream_t* out_stream) {
  require_not_null(device, "device");
  require_not_null(out_stream, "out_stream");
  oar::sdk::check_stream_desc(desc);
  // The priority is a hint; one worker per stream leaves the OS scheduler in
  // charge, so the cpu plugin takes no action on it.
  // Numbered thread names tell streams apart in a debugger or in `top -H`.
  static std::atomic<uint64_t> next_id{0};
  auto stream = std::make_unique<oar_stream_s>();
  stream->device = device;
  try {
    stream->queue = std::make_shared<oar::plugin::WorkQueue>(
        thread_prefix_ + std::to_string(next_id++), task_wrapper(device));
  } catch (const std::system_error& e) {
    // Each stream is a thread; running out of threads is running out of streams.
    throw oar::sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                          std::string("stream_create: cannot start a worker thread: ") + e.what());
  }
  std::lock_guard<std::mutex> lock(device->mutex);
  device->streams.emplace(stream.get(), stream->queue);
  *out_stream = stream.release();
}

void CpuPlugin::stream_destroy(oar_stream_t stream) {
  if (stream == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(stream->device->mutex);
    stream->device->streams.erase(stream);
  }
  // Drain here rather than rely on the queue's destructor: a concurrent
  // device_synchronize may hold the last reference, and the ABI promises the
  // work is done when destroy returns. A pending error is dropped, as the ABI
  // says.
  stream->queue->synchronize();
  delete stream;
}

void CpuPlugin::stream_synchronize(oar_stream_t stream) {
  require_not_null(stream, "stream");
  stream->queue->synchronize().throw_if_error();
}

void CpuPlugin::stream_query(oar_stream_t stream, bool* out_idle) {
  require_not_null(stream, "stream");
  require_not_null(out_idle, "out_idle");
  bool idle = false;
  stream->queue->query(&idle).throw_if_error();
  *out_idle = idle;
}

void CpuPlugin::stream_wait_event(oar_stream_t stream, oar_event_t event) {
  require_not_null(stream, "stream");
  require_not_null(event, "event");
  std::shared_ptr<oar::plugin::Marker> record = event->latest();
  oar::sdk::require(record != nullptr, OAR_STATUS_FAILED_PRECONDITION,
                    "stream_wait_event: the event was never recorded");
  // Waiting across device handles is allowed: on the host a record is just a
  // flag, and every cpu device handle is the same machine.
  stream->queue->submit_wait(std::move(record));
}

void CpuPlugin::stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                         void* user_data) {
  require_not_null(stream, "stream");
  oar::sdk::require(callback != nullptr, OAR_STATUS_INVALID_ARGUMENT,
                    "stream_add_host_callback: callback is NULL");
  stream->queue->submit_observer([callback, user_data](const oar::plugin::QueueStatus& status) {
    callback(user_data, status.code);
  });
}

}  // namespace oar::cpu
