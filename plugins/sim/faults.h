// Fault injection, configured with OAR_SIM_FAULTS, e.g.
//   OAR_SIM_FAULTS="alloc:0.01,kernel:0.001,copy:0.001,lost_after:5000,seed:42"
// plus "device:N" to inject faults into device N only.
// Every draw comes from a per-device PRNG seeded from |seed| and the device
// index, so a single-threaded program sees the same faults on every run.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

namespace oar::sim {

struct FaultConfig {
  double alloc = 0;         // probability that memory_allocate fails
  double kernel = 0;        // probability that a kernel fails on the engine
  double copy = 0;          // probability that a copy or fill fails on the engine
  uint64_t lost_after = 0;  // the device is lost after this many operations; 0: never
  uint64_t seed = 0;
  int64_t device = -1;  // only this device index faults; -1: every device

  bool any() const { return alloc > 0 || kernel > 0 || copy > 0 || lost_after > 0; }
};

// Parses OAR_SIM_FAULTS strictly; throws oar::sdk::Error (INVALID_ARGUMENT)
// on an unknown or repeated key, a bad number, a probability outside [0, 1]
// or a device index beyond int32.
FaultConfig parse_faults(const std::string& text);

// The fault state of one device. Thread-safe.
class FaultInjector {
 public:
  FaultInjector(const FaultConfig& config, int32_t device_index);

  // Throws the documented error if this allocation fails (RESOURCE_EXHAUSTED,
  // or UNAVAILABLE once the device is lost).
  void on_allocate();
  // Counts one engine operation and throws if it fails: UNAVAILABLE "device
  // lost" after lost_after operations, INTERNAL for a kernel fault, DATA_LOSS
  // for a copy fault.
  void on_operation(bool is_kernel, bool is_copy);
  // Throws UNAVAILABLE "device lost" once the device is lost: nothing new
  // (a stream, an event) starts on a lost device.
  void check_not_lost();

 private:
  bool draw(double probability);  // with mutex_ held

  FaultConfig config_;
  int32_t device_index_;
  std::mutex mutex_;
  uint64_t state_;
  uint64_t operations_ = 0;
  bool lost_ = false;
};

}  // namespace oar::sim
