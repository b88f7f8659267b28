#include "core/trace/tracer.h"

#include <time.h>

#include <cerrno>
#include <cinttypes>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/loader/host_services.h"

namespace oar::detail {
namespace {

// A JSON string literal of |text|; bytes that are not UTF-8 become U+FFFD, so
// a plugin's odd name never makes the file unreadable.
std::string quoted(const std::string& text) {
  return nlohmann::json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void append_record(std::string& out, const std::string& name, const std::string& category,
                   const std::string& device, uint64_t track, uint64_t start_ns, uint64_t end_ns) {
  std::string pid = quoted(device);
  char numbers[160];
  std::snprintf(numbers, sizeof(numbers),
                ",\"ph\":\"X\",\"ts\":%" PRIu64 ".%03" PRIu64 ",\"dur\":%" PRIu64 ".%03" PRIu64
                ",\"tid\":%" PRIu64,
                start_ns / 1000, start_ns % 1000, (end_ns - start_ns) / 1000,
                (end_ns - start_ns) % 1000, track);
  out += "{\"name\":";
  out += quoted(name);
  out += ",\"cat\":";
  out += quoted(category);
  out += numbers;
  out += ",\"pid\":";
  out += pid;
  out += ",\"args\":{\"device\":";
  out += pid;
  out += "}}";
}

}  // namespace

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
  if (users_++ > 0) return;
  path_ = path;
  records_.clear();
  records_.reserve(kBatchRecords);
  std::lock_guard<std::mutex> file_lock(file_mutex_);
  first_ = true;
  failed_ = false;
  written_ = 0;
  lost_ = 0;
  errno = 0;
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr) {
    int error = errno;
    log_line(OAR_LOG_LEVEL_WARNING, "trace",
             "OAR_TRACE: cannot open '" + path + "' for writing: " + std::strerror(error) +
                 "; tracing is off");
    return;
  }
  static const char kHeader[] = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  if (std::fwrite(kHeader, 1, sizeof(kHeader) - 1, file_) != sizeof(kHeader) - 1) {
    int error = errno;
    std::fclose(file_);
    file_ = nullptr;
    log_line(
        OAR_LOG_LEVEL_WARNING, "trace",
        "OAR_TRACE: cannot write '" + path + "': " + std::strerror(error) + "; tracing is off");
    return;
  }
  enabled_.store(true, std::memory_order_relaxed);
}

void Tracer::fail(const char* what, int error) {
  enabled_.store(false, std::memory_order_relaxed);
  if (failed_) return;
  failed_ = true;
  log_line(OAR_LOG_LEVEL_WARNING, "trace",
           std::string("OAR_TRACE: ") + what + " '" + path_ + "' failed: " + std::strerror(error) +
               "; tracing stops after " + std::to_string(written_) +
               " records (the file is incomplete)");
}

void Tracer::write_batch(const std::vector<Record>& batch) {
  std::lock_guard<std::mutex> file_lock(file_mutex_);
  if (file_ == nullptr || failed_) {
    lost_ += batch.size();
    return;
  }
  std::string text;
  text.reserve(batch.size() * 160);
  for (const Record& r : batch) {
    if (!first_) text += ",\n";
    first_ = false;
    append_record(text, r.name, r.category, r.device, r.track, r.start_ns, r.end_ns);
  }
  errno = 0;
  size_t done = std::fwrite(text.data(), 1, text.size(), file_);
  // Flushed batch by batch: a full disk shows now, not at exit.
  if (done != text.size() || std::fflush(file_) != 0) {
    lost_ += batch.size();
    fail("writing", errno != 0 ? errno : EIO);
    return;
  }
  written_ += batch.size();
}

void Tracer::stop() {
  std::vector<Record> rest;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    if (users_ == 0 || --users_ > 0) return;
    enabled_.store(false, std::memory_order_relaxed);
    rest.swap(records_);
    // Batches other threads took are written before the file closes.
    writers_done_.wait(lock, [&] { return writers_ == 0; });
  }
  write_batch(rest);
  std::lock_guard<std::mutex> file_lock(file_mutex_);
  if (file_ == nullptr) return;
  static const char kFooter[] = "\n]}\n";
  errno = 0;
  bool written = std::fwrite(kFooter, 1, sizeof(kFooter) - 1, file_) == sizeof(kFooter) - 1;
  int error = errno;
  if (std::fclose(file_) != 0 && written) {
    written = false;
    error = errno;
  }
  file_ = nullptr;
  if (!written) fail("closing", error != 0 ? error : EIO);
  if (lost_ > 0) {
    log_line(
        OAR_LOG_LEVEL_WARNING, "trace",
        "OAR_TRACE: " + std::to_string(lost_) + " records were not written to '" + path_ + "'");
  }
}

void Tracer::add(std::string name, std::string category, std::string device, uint64_t track,
                 uint64_t start_ns, uint64_t end_ns) {
  std::vector<Record> batch;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!enabled()) return;
    records_.push_back(Record{std::move(name), std::move(category), std::move(device), track,
                              start_ns, end_ns < start_ns ? start_ns : end_ns});
    if (records_.size() < kBatchRecords) return;
    batch.swap(records_);
    records_.reserve(kBatchRecords);
    ++writers_;
  }
  write_batch(batch);
  std::lock_guard<std::mutex> lock(mutex_);
  if (--writers_ == 0) writers_done_.notify_all();
}

size_t Tracer::buffered_records() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return records_.size();
}

}  // namespace oar::detail
