// Tracing (OAR_TRACE=file.json): timed records of the core's own calls and of
// the work plugins report through the host's trace service, written as
// Chrome-trace JSON (chrome://tracing, Perfetto). Records are streamed to the
// file while the program runs: memory holds at most kBatchRecords records per
// thread that is writing a batch, whatever the length of the run; the file is
// valid JSON once the last runtime stops. A file that cannot be opened, or a
// write that fails (a full disk), is reported when it happens, with the
// system's reason; tracing then stops and the count of lost records is given.
// Off by default; when off, each traced call costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

namespace oar::detail {

class Tracer {
 public:
  // Records gathered in memory before they are written out.
  static constexpr size_t kBatchRecords = 4096;

  // The process's tracer.
  static Tracer& instance();

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Opens |path| and starts tracing; a second runtime in the process shares
  // the first one's file. Reports a file that cannot be written at once.
  void start(const std::string& path);
  // Writes what is left and closes the file when the last runtime that
  // started it stops.
  void stop();

  // CLOCK_MONOTONIC nanoseconds, the clock plugins report in.
  static uint64_t now_ns();
  void add(std::string name, std::string category, std::string device, uint64_t track,
           uint64_t start_ns, uint64_t end_ns);

  // Records held in memory now, not yet written (for tests).
  size_t buffered_records() const;

 private:
  struct Record {
    std::string name;
    std::string category;
    std::string device;
    uint64_t track;
    uint64_t start_ns;
    uint64_t end_ns;
  };

  // Appends |batch| to the file (under file_mutex_); a failure is reported
  // and turns tracing off.
  void write_batch(const std::vector<Record>& batch);
  // Reports a failed write or close of the file once, with errno's reason.
  void fail(const char* what, int error);

  std::atomic<bool> enabled_{false};
  mutable std::mutex mutex_;  // users_, path_, records_, writers_
  std::condition_variable writers_done_;
  int users_ = 0;
  int writers_ = 0;  // batches taken from records_ and not yet written
  std::string path_;
  std::vector<Record> records_;

  std::mutex file_mutex_;  // file_, first_, failed_, lost_
  std::FILE* file_ = nullptr;
  bool first_ = true;  // no record written yet (no comma before the next)
  bool failed_ = false;
  uint64_t written_ = 0;
  uint64_t lost_ = 0;
};

// Times one core call into the trace when tracing is on.
class TraceScope {
 public:
  TraceScope(const char* name, const char* category, const std::string& device, const void* track)
      : TraceScope(name, category, device, track, Tracer::instance().enabled()) {}
  TraceScope(const char* name, const char* category, const std::string& device, const void* track,
             bool enabled)
      : enabled_(enabled) {
    if (enabled_) {
      name_ = name;
      category_ = category;
      device_ = &device;
      track_ = reinterpret_cast<uintptr_t>(track);
      start_ns_ = Tracer::now_ns();
    }
  }
  ~TraceScope() {
    if (enabled_) {
      Tracer::instance().add(name_, category_, *device_, track_, start_ns_, Tracer::now_ns());
    }
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  bool enabled_;
  const char* name_ = nullptr;
  const char* category_ = nullptr;
  const std::string* device_ = nullptr;
  uint64_t track_ = 0;
  uint64_t start_ns_ = 0;
};

}  // namespace oar::detail
