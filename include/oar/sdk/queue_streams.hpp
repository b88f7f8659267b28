// Streams and events for a plugin whose device work is driven from host
// threads in order: a device the host computes for (cpu), an emulator, or a
// device whose runtime offers blocking or callback-less calls. Each stream is
// a WorkQueue with its own worker thread; each event record is a Marker. A
// plugin class derives from QueueStreams and gets every stream and event slot
// and device_synchronize, with the rules of oar/stream.h and oar/event.h:
//
//  - work runs in submission order on its stream; across streams only events
//    order it (stream_wait_event blocks the waiting stream's worker, never
//    the host);
//  - the first failing work task puts its stream into a failed state:
//    stream_synchronize and stream_query return that error from then on, as
//    do event_query and event_synchronize of every event recorded after it;
//  - a stream that waits on an event recorded after a failure takes on that
//    error (the work after the wait depends on work that did not run; of the
//    two behaviours docs/abi.md section 5 allows, the one a framework can see);
//  - host callbacks run once, in order, on the worker, with OK or the
//    stream's error;
//  - device_synchronize waits for every stream of the device, then returns
//    the first error of any of them;
//  - an event never recorded is complete; stream_wait_event on it fails with
//    FAILED_PRECONDITION; timing events measure the host's monotonic clock
//    between the records' completions.
//
// The plugin submits its copies and kernels with QueueStreams::submit, and
// calls release_device from device_close. The handles oar_stream_s and
// oar_event_s are defined here (oar/handles.h declares them), so a plugin that
// uses QueueStreams does not define its own.
//
//   class MyPlugin : public oar::sdk::QueueStreams {
//    public:
//     MyPlugin() : QueueStreams("my-s") {}
//     void memory_copy_h2d(oar_stream_t s, oar_memory_t dst, uint64_t off,
//                          const void* src, uint64_t size) {
//       submit(s, [=] { my_runtime_copy(dst, off, src, size); });
//     }
//     ...
//   };
//
// Threading: every member is thread-safe except as oar/stream.h and
// oar/event.h allow the caller to serialise (destroying a stream or event).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "oar/oar.h"
#include "oar/sdk/work_queue.hpp"

struct oar_stream_s {
  oar_device_t device = nullptr;
  std::shared_ptr<oar::sdk::WorkQueue> queue;
};

struct oar_event_s {
  oar_device_t device = nullptr;
  uint32_t flags = 0;
  // event_query is thread-safe while event_record is only thread-compatible,
  // so swapping the latest record needs a lock.
  std::mutex mutex;
  std::shared_ptr<oar::sdk::Marker> record;  // null until first recorded

  std::shared_ptr<oar::sdk::Marker> latest() {
    std::lock_guard<std::mutex> lock(mutex);
    return record;
  }
};

namespace oar::sdk {

class QueueStreams {
 public:
  // |thread_prefix| names the worker threads (a number is appended; Linux
  // keeps 15 characters), so that streams show apart in a debugger.
  explicit QueueStreams(std::string thread_prefix);
  // Releases what release_device was not called for (a host that never
  // closed its devices).
  virtual ~QueueStreams();

  QueueStreams(const QueueStreams&) = delete;
  QueueStreams& operator=(const QueueStreams&) = delete;

  // Slots (their contracts are in oar/device.h, oar/stream.h, oar/event.h).
  void device_synchronize(oar_device_t device);
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

  // Queues |work| on |stream| after everything submitted before it. |work|
  // fails the stream by throwing (Error keeps its code). Throws
  // INVALID_ARGUMENT for a NULL stream.
  static void submit(oar_stream_t stream, std::function<void()> work, TaskInfo info = {});

  // For device_close: destroys the streams (after their work) and events of
  // |device| the caller left alive, and logs a warning naming how many.
  // Returns their number.
  size_t release_device(oar_device_t device);

 protected:
  // What wraps every work task of a new stream of |device| (default: none);
  // a simulator models costs or injects faults here.
  virtual TaskWrapper task_wrapper(oar_device_t device);

  // The options of every stream's queue (default: none; the cpu plugin turns
  // inline work on). Call from the constructor, before any stream exists.
  void set_queue_options(WorkQueueOptions options) { queue_options_ = options; }

 private:
  struct Objects {
    // Shared ownership, so that a device_synchronize racing a stream_destroy
    // never touches a freed queue.
    std::unordered_map<oar_stream_s*, std::shared_ptr<WorkQueue>> streams;
    std::unordered_set<oar_event_s*> events;
  };

  const std::string thread_prefix_;
  WorkQueueOptions queue_options_;
  std::atomic<uint64_t> next_stream_id_{0};
  std::mutex mutex_;
  std::unordered_map<oar_device_t, Objects> devices_;
};

}  // namespace oar::sdk
