// Waiting on the host for device work: poll for a short while, then block.
//
// A blocking wait in a driver (clFinish, vkWaitSemaphores) sleeps the calling
// thread and has the driver's thread wake it when the work ends; for short
// work the sleep and the wake-up cost more than the work (on PoCL and
// lavapipe here, a third of an empty op's round trip). Polling first, as
// CUDA's cudaDeviceScheduleAuto does on a machine with spare cores, returns
// as soon as the work is done; work that takes longer than the budget costs
// one core the budget, then the blocking wait as before. A HostWait (one per
// stream or event) polls only while its previous wait ended within the
// budget, so a stream busy with long work (large copies, big kernels) blocks
// at once and leaves the driver both cores; one short wait turns polling on
// again.
//
// Polling helps only where a core is free for it: on an oversubscribed host
// (more runnable threads than CPUs: other processes' load, or a CPU-backed
// device such as PoCL or lavapipe whose worker threads need the cores the
// poller would take) it can make the wait longer. A HostWait therefore times
// its own polled and blocking waits and keeps to the faster way (below); the
// host's load (host_oversubscribed()) only decides until both were timed.
//
// Budget: OAR_SYNC_SPIN_US microseconds (default 100); 0 never polls. A value
// that is not a number from 0 to 1000000 is reported once and the default used.
//
// Threading: thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace oar::sdk {

// The budget |text| names (OAR_SYNC_SPIN_US's value; null when unset). A bad
// value gives the default and a sentence for the log in |problem|.
std::chrono::nanoseconds parse_spin_budget(const char* text, std::string* problem);

// The polling budget the environment sets (read once per process; a bad value
// is logged once).
std::chrono::nanoseconds spin_budget();

// Whether the runnable threads of the whole host (/proc/loadavg's running
// count, the caller included) exceed its online CPUs, so that a thread
// spinning now would take a core from one that has work. Sampled at most
// every 2 ms (one read of /proc/loadavg); false where it cannot be read.
bool host_oversubscribed();
// The same decision on a /proc/loadavg text and a CPU count; false when the
// text does not parse.
bool loadavg_oversubscribed(const char* loadavg, long cpus);

// One pause of a polling loop (the CPU's spin-wait hint).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

// Calls |done| until it returns true (then true) or |budget| is spent (then
// false: the caller blocks). |done| must be cheap and must not block; between
// two calls the loop pauses, so that the driver's thread can take the locks
// |done| reads under.
template <typename Done>
bool spin_until(std::chrono::nanoseconds budget, Done&& done) {
  if (budget.count() <= 0) return false;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (done()) return true;
    if (std::chrono::steady_clock::now() - start >= budget) return false;
    for (int i = 0; i < 16; ++i) cpu_relax();
  }
}

// The waits of one stream or event: polls when its previous wait was short
// and polling has been the faster way to wait here.
//
//   auto start = std::chrono::steady_clock::now();
//   if (waits.should_poll()) waits.poll([&] { return done(); });
//   blocking_wait();  // returns at once when the poll saw the work done
//   waits.finished(start);
//
// Whether polling helps is measured, not assumed: a HostWait keeps the
// durations of its last kSamples polled waits and of its last kSamples
// blocking waits, and waits the way whose median is lower. Every
// kExploreEvery-th wait goes the other way, so that both medians follow a
// machine whose load changes; while the other way's median is more than 1.5
// times the faster one's, only every (kExploreEvery * kClearLoserFactor)-th
// does (retrying a clear loser costs more than it is likely to tell; with
// set_retry_stale_loser(true), only while its latest wait was as slow too). Until
// both ways have been timed it polls when the host has a core to spare
// (host_busy) and blocks when it has not. Waits that block because the
// previous wait was long (or polling is off) are no choice and not counted.
class HostWait {
 public:
  // Durations kept per way.
  static constexpr int kSamples = 8;
  // One wait in this many goes the way that is not the faster one now.
  static constexpr uint32_t kExploreEvery = 32;
  static constexpr uint32_t kClearLoserFactor = 8;

  // |host_busy|: whether spinning would take a core from other work now.
  explicit HostWait(std::chrono::nanoseconds budget = spin_budget(),
                    bool (*host_busy)() = host_oversubscribed)
      : budget_(budget), host_busy_(host_busy) {}

  // True when this wait should poll: polling is on, the previous wait (if
  // any) ended within the budget, and polling is the faster way here (or,
  // before both ways were timed, the host has a core to spare), except on
  // the waits that try the other way. Records the choice for finished().
  bool should_poll() const;
  // Polls |done| for up to the budget; true when it returned true.
  template <typename Done>
  bool poll(Done&& done) const {
    return spin_until(budget_, done);
  }
  // Records how long the wait begun at |start| took, polled or blocked (as
  // the last should_poll() chose).
  void finished(std::chrono::steady_clock::time_point start) {
    finished_after(std::chrono::steady_clock::now() - start);
  }
  // The same with the wait's duration.
  void finished_after(std::chrono::nanoseconds took);

  // When |on|, a clear loser whose latest wait was within 1.5 times the
  // winner's median is retried every kExploreEvery-th wait again, so that a
  // stale median (8 samples taken one in 256 waits) catches up within a few
  // hundred waits. For waits whose blocking durations are bimodal: on PoCL an
  // empty op often ends inside clEnqueueNDRangeKernel and clFinish returns in
  // 0.05 us, else sleeps 15-200 us, and blocking timed slow once (at start-up)
  // kept an opencl stream polling a marker for thousands of waits. Off by
  // default (vulkan): on lavapipe at load 17-30 it was not shown to help, and
  // a slow state (OAR 3.3x native) came in 3 of 4 runs with it on, 1 of 3
  // with it off: too few to tell (docs/performance.md).
  void set_retry_stale_loser(bool on) { retry_stale_loser_.store(on, std::memory_order_relaxed); }

  // The medians of the kept polled and blocking waits in nanoseconds; -1
  // until that way has been timed.
  int64_t polled_median_ns() const { return polled_.median.load(std::memory_order_relaxed); }
  int64_t blocked_median_ns() const { return blocked_.median.load(std::memory_order_relaxed); }

 private:
  enum Choice : uint8_t { kForcedBlock, kBlock, kPoll };
  struct Samples {
    std::atomic<int64_t> ns[kSamples] = {};
    std::atomic<uint32_t> count{0};   // samples ever recorded
    std::atomic<int64_t> median{-1};  // of the kept samples; -1 before the first
  };
  // Keeps |took| in |samples|, and updates their median when |update_median|.
  static void add(Samples& samples, int64_t took, bool update_median);

  std::chrono::nanoseconds budget_;
  bool (*host_busy_)();
  std::atomic<int64_t> last_wait_ns_{0};
  Samples polled_;
  Samples blocked_;
  std::atomic<bool> poll_is_faster_{false};  // meaningful once both ways were timed
  std::atomic<bool> clear_loser_{false};     // the slower way's median > 1.5 x the faster's
  std::atomic<bool> retry_stale_loser_{false};
  mutable std::atomic<uint32_t> waits_{0};
  mutable std::atomic<Choice> choice_{kForcedBlock};  // the last should_poll()'s
};

}  // namespace oar::sdk
