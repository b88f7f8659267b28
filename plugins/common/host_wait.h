// Waiting on the host for device work: poll for a short while, then block.
//
// A blocking wait in a driver (clFinish, vkWaitSemaphores) sleeps the calling
// thread and has the driver's thread wake it when the work ends; for short
// work the sleep and the wake-up cost more than the work (on PoCL and
// lavapipe here, a third of an empty op's round trip). Polling first, as
// CUDA's cudaDeviceScheduleAuto does on a machine with spare cores, returns
// as soon as the work is done; work that takes longer than the budget costs
// one core the budget, then the blocking wait as before.
//
// Budget: OAR_SYNC_SPIN_US microseconds (default 100); 0 never polls. A value
// that is not a number from 0 to 1000000 is reported once and the default used.
//
// Threading: thread-safe.
#pragma once

#include <chrono>
#include <string>

namespace oar::plugin {

// The budget |text| names (OAR_SYNC_SPIN_US's value; null when unset). A bad
// value gives the default and a sentence for the log in |problem|.
std::chrono::nanoseconds parse_spin_budget(const char* text, std::string* problem);

// The polling budget the environment sets (read once per process; a bad value
// is logged once).
std::chrono::nanoseconds spin_budget();

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

// The same with the environment's budget.
template <typename Done>
bool spin_until(Done&& done) {
  return spin_until(spin_budget(), done);
}

}  // namespace oar::plugin
