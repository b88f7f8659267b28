#include "oar/sdk/work_queue.hpp"

#include <pthread.h>
#include <time.h>

#include <exception>
#include <utility>

#include "oar/sdk/plugin.hpp"

namespace oar::sdk {

uint64_t steady_now_ns() {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000u + static_cast<uint64_t>(now.tv_nsec);
}

void QueueStatus::throw_if_error() const {
  if (!ok()) throw oar::sdk::Error(code, message);
}

void Marker::complete(QueueStatus status) {
  uint64_t now = steady_now_ns();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    status_ = std::move(status);
    timestamp_ns_ = now;
    done_ = true;
  }
  completed_.notify_all();
}

QueueStatus Marker::query(bool* out_done) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *out_done = done_;
  return done_ ? status_ : QueueStatus{};
}

QueueStatus Marker::wait() const {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [this] { return done_; });
  return status_;
}

uint64_t Marker::timestamp_ns() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return timestamp_ns_;
}

WorkQueue::WorkQueue(const std::string& name, TaskWrapper around, WorkQueueOptions options)
    : around_(std::move(around)), inline_max_bytes_(around_ ? 0 : options.inline_max_bytes) {
  worker_ = std::thread([this] { run(); });
  // Linux caps thread names at 15 characters plus the NUL.
  pthread_setname_np(worker_.native_handle(), name.substr(0, 15).c_str());
}

WorkQueue::~WorkQueue() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  has_work_.notify_one();
  worker_.join();
}

void WorkQueue::submit(std::function<void()> work, TaskInfo info) {
  Task task{std::move(work), nullptr, info};
  const bool small = info.kind != TaskInfo::kOther && info.bytes <= inline_max_bytes_;
  QueueStatus status;
  if (small && try_claim_inline(&status)) {
    run_inline(std::move(task), status);
  } else {
    push(std::move(task));
  }
}

void WorkQueue::submit_observer(std::function<void(const QueueStatus&)> observer) {
  push(Task{nullptr, std::move(observer), {}});
}

void WorkQueue::submit_marker(std::shared_ptr<Marker> marker) {
  Task task{nullptr,
            [marker = std::move(marker)](const QueueStatus& status) { marker->complete(status); },
            {}};
  // Completing a marker is the queue's own code, never the caller's: on an
  // idle queue it completes at once.
  QueueStatus status;
  if (try_claim_inline(&status)) {
    run_inline(std::move(task), status);
  } else {
    push(std::move(task));
  }
}

void WorkQueue::submit_wait(std::shared_ptr<const Marker> marker) {
  // Only a marker that already completed may be checked here: waiting for
  // one would block the caller, which the wait must never do.
  bool done = false;
  if (inline_max_bytes_ != 0) marker->query(&done);
  Task task{[marker = std::move(marker)] {
              QueueStatus awaited = marker->wait();
              if (!awaited.ok()) {
                throw oar::sdk::Error(
                    awaited.code, "waited on an event whose stream had failed: " + awaited.message);
              }
            },
            nullptr,
            {}};
  QueueStatus status;
  if (done && try_claim_inline(&status)) {
    run_inline(std::move(task), status);
  } else {
    push(std::move(task));
  }
}

QueueStatus WorkQueue::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  uint64_t ticket = submitted_;
  progressed_.wait(lock, [&] { return completed_ >= ticket; });
  return status_;
}

QueueStatus WorkQueue::query(bool* out_idle) const {
  std::lock_guard<std::mutex> lock(mutex_);
  *out_idle = completed_ == submitted_;
  return status_;
}

bool WorkQueue::try_claim_inline(QueueStatus* status) {
  if (inline_max_bytes_ == 0) return false;
  std::lock_guard<std::mutex> lock(mutex_);
  // completed_ == submitted_: nothing queued, nothing on the worker and no
  // other inline task (each counts as submitted until it completed).
  if (stopping_ || completed_ != submitted_) return false;
  inline_running_ = true;
  ++submitted_;
  *status = status_;
  return true;
}

void WorkQueue::run_inline(Task task, const QueueStatus& status) {
  execute(task, status);
  task = Task{};  // as on the worker: released before it counts as complete
  bool queued = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ++completed_;
    inline_running_ = false;
    queued = !tasks_.empty();
  }
  progressed_.notify_all();
  // Work other threads submitted meanwhile waited for this task.
  if (queued) has_work_.notify_one();
}

void WorkQueue::push(Task task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
    ++submitted_;
  }
  has_work_.notify_one();
}

void WorkQueue::fail(oar_status_t code, std::string message) {
  std::lock_guard<std::mutex> lock(mutex_);
  // The first error is the one that explains the rest; later ones are skipped
  // work anyway, or observers that failed after it.
  if (status_.ok()) status_ = QueueStatus{code, std::move(message)};
}

void WorkQueue::execute(Task& task, const QueueStatus& status) {
  try {
    if (task.work) {
      if (status.ok()) {
        if (around_)
          around_(task.info, task.work);
        else
          task.work();
      }
    } else {
      task.observer(status);
    }
  } catch (const oar::sdk::Error& e) {
    fail(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    fail(OAR_STATUS_RESOURCE_EXHAUSTED, "host memory exhausted in asynchronous work");
  } catch (const std::exception& e) {
    fail(OAR_STATUS_INTERNAL, e.what());
  } catch (...) {
    fail(OAR_STATUS_INTERNAL, "unknown exception in asynchronous work");
  }
}

void WorkQueue::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    has_work_.wait(lock, [this] { return !inline_running_ && (stopping_ || !tasks_.empty()); });
    // Stopping still drains: the destructor promises that submitted work runs.
    if (tasks_.empty()) return;
    Task task = std::move(tasks_.front());
    tasks_.pop_front();
    QueueStatus status = status_;
    lock.unlock();

    execute(task, status);
    // Release what the task captured before anyone can observe it complete,
    // so that a synchronize really means the stream holds nothing any more.
    task = Task{};

    lock.lock();
    ++completed_;
    progressed_.notify_all();
  }
}

}  // namespace oar::sdk
