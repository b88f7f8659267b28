// An in-order asynchronous engine: one worker thread runs a queue's tasks in
// submission order. Plugins whose "device" is the host (cpu) or is emulated on
// the host (an NPU simulator) build their streams on it, so that the stream
// semantics of oar/stream.h and oar/event.h live in one place:
//
//  - work runs in submission order, each task after the previous one finished;
//  - the first failing work task puts the queue into a failed state for good:
//    later work tasks are skipped, while observers (event markers, host
//    callbacks) still run and are told the queue's error;
//  - synchronize/query report that error on the calling thread.
//
// Inline work (WorkQueueOptions::inline_max_bytes, off by default): a small
// work task submitted while the queue is idle (nothing queued, nothing
// running) runs on the submitting thread before submit returns, instead of
// being handed to the worker, with the same rules: it counts as submitted
// and completed like any task, work submitted meanwhile from other threads
// waits for it, a failure fails the queue (submit itself never throws the
// work's error), and markers submitted on an idle queue complete at once.
// Host callbacks (submit_observer) and waits on incomplete markers always go
// to the worker: the caller never runs user code or blocks on another queue.
// A queue with a TaskWrapper (a simulator modelling a device) never runs work
// inline.
//
// Threading: every member is thread-safe. The destructor drains the queue
// first; no other call may use the queue concurrently with it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "oar/status.h"

namespace oar::sdk {

// CLOCK_MONOTONIC nanoseconds: the clock oar_trace_record_t uses, so event
// timestamps and trace records share one time base.
uint64_t steady_now_ns();

// The outcome of a queue's work so far: OK, or its first failure.
struct QueueStatus {
  oar_status_t code = OAR_STATUS_OK;
  std::string message;

  bool ok() const { return code == OAR_STATUS_OK; }
  // Throws oar::sdk::Error(code, message) unless ok(): how a plugin member
  // reports an asynchronous error on the thread that observes it.
  void throw_if_error() const;
};

// A point in a queue's order, completed when the queue reaches it: what an
// event record captures. It is shared by the event (to query it), the queue
// (to complete it) and every queue waiting on it, so that destroying or
// re-recording the event never pulls it from under a pending task.
class Marker {
 public:
  // Completes the marker with |status|, stamped with the current time.
  void complete(QueueStatus status);
  // Writes whether the marker completed; returns its status (OK until done).
  QueueStatus query(bool* out_done) const;
  // Blocks until the marker completes; returns its status.
  QueueStatus wait() const;
  // The time the marker completed; only meaningful once query says done.
  uint64_t timestamp_ns() const;

 private:
  mutable std::mutex mutex_;
  mutable std::condition_variable completed_;
  bool done_ = false;
  QueueStatus status_;
  uint64_t timestamp_ns_ = 0;
};

// What a work task is, for a plugin that wraps every task (a simulator that
// models costs or injects faults): the kind of work and the bytes it moves.
struct TaskInfo {
  enum Kind : uint8_t { kOther = 0, kCopy = 1, kKernel = 2 };
  Kind kind = kOther;
  uint64_t bytes = 0;
};

// Runs |work| on the worker, with whatever the plugin does around it; it may
// throw instead of running the work (the task then fails like the work would).
using TaskWrapper = std::function<void(const TaskInfo& info, const std::function<void()>& work)>;

// How a queue treats its tasks beyond the defaults.
struct WorkQueueOptions {
  // Work tasks of kind kKernel or kCopy whose TaskInfo::bytes is at most this
  // run on the submitting thread when the queue is idle (see above); 0: never.
  uint64_t inline_max_bytes = 0;
};

class WorkQueue {
 public:
  // Starts the worker thread; |name| names it for debuggers (15 characters
  // are kept). |around|, if set, wraps every work task (not observers) and
  // turns inline work off.
  explicit WorkQueue(const std::string& name, TaskWrapper around = nullptr,
                     WorkQueueOptions options = {});
  // Runs everything already submitted, then stops the worker.
  ~WorkQueue();

  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  // Submits work. It is skipped once the queue has failed; it fails the queue
  // by throwing (oar::sdk::Error keeps its code, anything else is INTERNAL).
  void submit(std::function<void()> work, TaskInfo info = {});

  // Submits an observer: it always runs, in order, and receives the queue's
  // status at that point. It must not throw.
  void submit_observer(std::function<void(const QueueStatus&)> observer);

  // Completes |marker| with the queue's status once all work submitted before
  // it has completed.
  void submit_marker(std::shared_ptr<Marker> marker);

  // Blocks the worker (not the caller) until |marker| completes. A marker that
  // completed with an error fails this queue too: the work after the wait
  // depends on work that did not happen.
  void submit_wait(std::shared_ptr<const Marker> marker);

  // Blocks until everything submitted before the call has completed; returns
  // the queue's status.
  QueueStatus synchronize();

  // Writes whether nothing is queued and nothing is running; returns the
  // queue's status.
  QueueStatus query(bool* out_idle) const;

 private:
  struct Task {
    std::function<void()> work;                        // skipped once failed
    std::function<void(const QueueStatus&)> observer;  // always runs
    TaskInfo info;
  };

  void push(Task task);
  // Claims the idle queue for a task run on the calling thread and writes the
  // queue's status; false (and nothing changed) unless inline work is on and
  // the queue is idle.
  bool try_claim_inline(QueueStatus* status);
  // Runs |task| on the calling thread after try_claim_inline, then completes it.
  void run_inline(Task task, const QueueStatus& status);
  // Runs |task| (work or observer) given the queue's status before it; a
  // failure fails the queue. Called without the lock.
  void execute(Task& task, const QueueStatus& status);
  void run();
  void fail(oar_status_t code, std::string message);

  mutable std::mutex mutex_;
  std::condition_variable has_work_;
  mutable std::condition_variable progressed_;
  std::deque<Task> tasks_;
  // Tickets instead of "queue empty": a synchronize waits for what was
  // submitted before it, even while other threads keep submitting.
  uint64_t submitted_ = 0;
  uint64_t completed_ = 0;
  QueueStatus status_;
  bool stopping_ = false;
  // A task is running on a submitting thread; the worker starts nothing
  // meanwhile.
  bool inline_running_ = false;
  TaskWrapper around_;               // set before the worker starts, never changed
  const uint64_t inline_max_bytes_;  // 0 with a wrapper
  std::thread worker_;
};

}  // namespace oar::sdk
