#include "oar/sdk/host_wait.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "oar/sdk/plugin.hpp"

namespace oar::sdk {
namespace {

constexpr long kDefaultMicroseconds = 100;
constexpr long kMostMicroseconds = 1000000;

constexpr int64_t kLoadSampleNs = 2000000;  // how long one /proc/loadavg reading is trusted

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

bool loadavg_oversubscribed(const char* loadavg, long cpus) {
  // "0.52 0.58 0.59 3/412 12345": the fourth field is runnable/total.
  const char* field = loadavg;
  for (int spaces = 0; spaces < 3; ++field) {
    if (*field == '\0') return false;
    if (*field == ' ') ++spaces;
  }
  char* end = nullptr;
  long runnable = std::strtol(field, &end, 10);
  if (end == field || *end != '/' || cpus <= 0) return false;
  return runnable > cpus;
}

bool host_oversubscribed() {
  static std::atomic<int64_t> sampled_at{INT64_MIN / 2};
  static std::atomic<bool> busy{false};
  static const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int64_t now = now_ns();
  if (now - sampled_at.load(std::memory_order_relaxed) < kLoadSampleNs) {
    return busy.load(std::memory_order_relaxed);
  }
  sampled_at.store(now, std::memory_order_relaxed);
  char text[128];
  int fd = ::open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t got = ::read(fd, text, sizeof(text) - 1);
  ::close(fd);
  if (got <= 0) return false;
  text[got] = '\0';
  bool result = loadavg_oversubscribed(text, cpus);
  busy.store(result, std::memory_order_relaxed);
  return result;
}

std::chrono::nanoseconds parse_spin_budget(const char* text, std::string* problem) {
  const std::chrono::nanoseconds fallback = std::chrono::microseconds(kDefaultMicroseconds);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > kMostMicroseconds) {
    *problem = std::string("OAR_SYNC_SPIN_US=\"") + text +
               "\" is not a whole number of microseconds from 0 to 1000000; polling " +
               std::to_string(kDefaultMicroseconds) +
               " us before blocking (set it to 0 to block at once)";
    return fallback;
  }
  return std::chrono::microseconds(value);
}

std::chrono::nanoseconds spin_budget() {
  static const std::chrono::nanoseconds budget = [] {
    std::string problem;
    std::chrono::nanoseconds parsed =
        parse_spin_budget(secure_getenv("OAR_SYNC_SPIN_US"), &problem);
    if (!problem.empty()) oar::sdk::log(OAR_LOG_LEVEL_WARNING, problem);
    return parsed;
  }();
  return budget;
}

}  // namespace oar::sdk
