#include "core/trace/tracer.h"

#include <time.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/loader/host_services.h"

namespace oar::detail {

Tracer& Tracer::instance() {
  static Tracer* tracer = new Tracer();  // outlives static teardown: plugins may still report
  return *tracer;
}

uint64_t Tracer::now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

void Tracer::start(const std::string& path) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (users_++ == 0) {
    path_ = path;
    records_.clear();
    enabled_.store(true, std::memory_order_relaxed);
  }
}

void Tracer::stop() {
  std::vector<Record> records;
  std::string path;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (users_ == 0 || --users_ > 0) return;
    enabled_.store(false, std::memory_order_relaxed);
    records.swap(records_);
    path.swap(path_);
  }
  nlohmann::json events = nlohmann::json::array();
  for (const Record& r : records) {
    events.push_back({{"name", r.name},
                      {"cat", r.category},
                      {"ph", "X"},
                      {"ts", double(r.start_ns) / 1000.0},
                      {"dur", double(r.end_ns - r.start_ns) / 1000.0},
                      {"pid", r.device},
                      {"tid", r.track},
                      {"args", {{"device", r.device}}}});
  }
  std::ofstream file(path);
  file << nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ns"}}.dump() << "\n";
  if (!file) log_line(OAR_LOG_LEVEL_WARNING, "trace", "cannot write OAR_TRACE file " + path);
}

void Tracer::add(std::string name, std::string category, std::string device, uint64_t track,
                 uint64_t start_ns, uint64_t end_ns) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!enabled()) return;
  records_.push_back(Record{std::move(name), std::move(category), std::move(device), track,
                            start_ns, end_ns < start_ns ? start_ns : end_ns});
}

}  // namespace oar::detail
