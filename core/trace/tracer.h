// Tracing (OAR_TRACE=file.json): timed records of the core's own calls and of
// the work plugins report through the host's trace service, written as
// Chrome-trace JSON (chrome://tracing, Perfetto) when the runtime shuts down.
// Off by default; when off, each traced call costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace oar::detail {

class Tracer {
 public:
  // The process's tracer.
  static Tracer& instance();

  bool enabled() const { return enabled_.load(std::memory_order_relaxed); }
  // Starts collecting for a file; a second runtime in the process shares it.
  void start(const std::string& path);
  // Writes the file when the last runtime that started it stops.
  void stop();

  // CLOCK_MONOTONIC nanoseconds, the clock plugins report in.
  static uint64_t now_ns();
  void add(std::string name, std::string category, std::string device, uint64_t track,
           uint64_t start_ns, uint64_t end_ns);

 private:
  struct Record {
    std::string name;
    std::string category;
    std::string device;
    uint64_t track;
    uint64_t start_ns;
    uint64_t end_ns;
  };

  std::atomic<bool> enabled_{false};
  std::mutex mutex_;
  int users_ = 0;
  std::string path_;
  std::vector<Record> records_;
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
