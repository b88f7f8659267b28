#include "oar/sdk/host_wait.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
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

void HostWait::add(Samples& samples, int64_t took, bool update_median) {
  uint32_t count = samples.count.load(std::memory_order_relaxed);
  samples.ns[count % uint32_t(kSamples)].store(took, std::memory_order_relaxed);
  samples.count.store(count + 1, std::memory_order_relaxed);
  if (!update_median) return;
  int kept = count + 1 < uint32_t(kSamples) ? int(count + 1) : kSamples;
  int64_t values[kSamples];
  for (int i = 0; i < kept; ++i) values[i] = samples.ns[i].load(std::memory_order_relaxed);
  std::nth_element(values, values + kept / 2, values + kept);
  samples.median.store(values[kept / 2], std::memory_order_relaxed);
}

bool HostWait::should_poll() const {
  if (budget_.count() <= 0 || last_wait_ns_.load(std::memory_order_relaxed) > budget_.count()) {
    choice_.store(kForcedBlock, std::memory_order_relaxed);
    return false;
  }
  bool timed = polled_.count.load(std::memory_order_relaxed) > 0 &&
               blocked_.count.load(std::memory_order_relaxed) > 0;
  bool poll = timed ? poll_is_faster_.load(std::memory_order_relaxed) : !host_busy_();
  const uint32_t every = clear_loser_.load(std::memory_order_relaxed)
                             ? kExploreEvery * kClearLoserFactor
                             : kExploreEvery;
  // A plain increment: two threads waiting at once may count their waits as one.
  const uint32_t wait = waits_.load(std::memory_order_relaxed);
  waits_.store(wait + 1, std::memory_order_relaxed);
  if (wait % every == every - 1) poll = !poll;
  choice_.store(poll ? kPoll : kBlock, std::memory_order_relaxed);
  return poll;
}

void HostWait::finished_after(std::chrono::nanoseconds duration) {
  const int64_t took = duration.count();
  last_wait_ns_.store(took, std::memory_order_relaxed);
  const Choice choice = choice_.load(std::memory_order_relaxed);
  if (choice == kForcedBlock) return;
  // The way not taken by default gets a sample once in kExploreEvery waits
  // or less: its median follows each one. The usual way's median moves
  // slowly; updating it on every fourth wait keeps the wait path short.
  Samples& samples = choice == kPoll ? polled_ : blocked_;
  const bool usual = polled_.count.load(std::memory_order_relaxed) > 0 &&
                     blocked_.count.load(std::memory_order_relaxed) > 0 &&
                     (choice == kPoll) == poll_is_faster_.load(std::memory_order_relaxed);
  add(samples, took, !usual || samples.count.load(std::memory_order_relaxed) % 4 == 0);
  const int64_t polled = polled_.median.load(std::memory_order_relaxed);
  const int64_t blocked = blocked_.median.load(std::memory_order_relaxed);
  if (polled >= 0 && blocked >= 0) {
    poll_is_faster_.store(polled < blocked, std::memory_order_relaxed);
    const int64_t faster = std::min(polled, blocked);
    const int64_t slower = std::max(polled, blocked);
    const int64_t bound = faster + faster / 2;
    bool clear = slower > bound;
    if (clear && retry_stale_loser_.load(std::memory_order_relaxed)) {
      // The loser's median is 8 waits old, gathered one in kExploreEvery *
      // kClearLoserFactor waits: a latest wait within the bound (the machine
      // changed, or the loser's durations are bimodal, as a blocking wait is
      // when the work sometimes ends before the wait begins) has it retried
      // at the usual rate, so that its median catches up in a few hundred
      // waits instead of a few thousand.
      const Samples& loser = polled > blocked ? polled_ : blocked_;
      const uint32_t kept = loser.count.load(std::memory_order_relaxed);
      clear = loser.ns[(kept - 1) % uint32_t(kSamples)].load(std::memory_order_relaxed) > bound;
    }
    clear_loser_.store(clear, std::memory_order_relaxed);
  }
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
