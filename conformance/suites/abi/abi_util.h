// Helpers of the ABI suite: registration, capability checks, host callbacks the
// tests observe (a gate that holds a stream's work back, a probe that marks
// when the work before it is done), bounded waits, status checks that also
// demand the plugin's message, and byte patterns.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "conformance/harness/test.h"
#include "oar/oar.hpp"

namespace oar::conformance::abi {

// Adds "abi/<topic>/<name>" to group "abi/<topic>".
void add(Registry& registry, const std::string& topic, const std::string& name,
         std::function<void(TestContext&)> body);

// Skips unless the device lists |feature| (an oar_device_feature_e bit).
void require_feature(const Device& device, uint32_t feature);
const char* feature_name(uint32_t feature);
bool has_callbacks(const Device& device);
// "device", "host_pinned", "unified".
const char* kind_name(uint32_t kind);
// Every memory kind the device lists, one bit each.
std::vector<uint32_t> listed_kinds(const oar_device_properties_t& properties);

// How long a test waits for something the ABI says happens on its own (a host
// callback running, a stream going idle) before it fails saying so: long
// enough for any device, far below the harness's timeout of a whole test.
inline constexpr std::chrono::seconds kWaitLimit{10};

// Polls |done| until it is true or |limit| has passed; returns the last value.
bool wait_until(const std::function<bool()>& done,
                std::chrono::milliseconds limit = std::chrono::milliseconds(kWaitLimit));

// A host callback the test observes, registered through the plugin's slot
// (not Stream::add_callback, whose wrapper frees itself after one call): its
// state outlives the test, so a plugin that calls it late or twice cannot
// corrupt memory, and every call is counted. Requires HOST_CALLBACKS.
// Construction fails the test if the plugin ran the callback at once, on the
// calling thread inside stream_add_host_callback (docs/abi.md: callbacks run
// on a plugin thread after the work submitted before them).
class ObservedCallback {
 public:
  struct State;
  using Clock = std::chrono::steady_clock;
  ObservedCallback(const ObservedCallback&) = delete;
  ObservedCallback& operator=(const ObservedCallback&) = delete;

  int calls() const;
  bool started() const;
  // The callback body has returned (for a gate: it was released).
  bool finished() const;
  Clock::time_point started_at() const;
  Clock::time_point finished_at() const;
  // The status of the first call (-1 before it).
  oar_status_t status() const;
  // Fails with "the host callback <what> never ran within 10 s" (or "started
  // but did not finish") unless it finished within kWaitLimit.
  void wait_finished(const std::string& what) const;

 protected:
  // |sleep|: how long the body takes; |gate|: it blocks until released;
  // |on_run|: called first in the body (once, on the plugin's thread).
  ObservedCallback(Device& device, oar_stream_t stream, std::chrono::milliseconds sleep, bool gate,
                   std::function<void(oar_status_t)> on_run);
  std::shared_ptr<State> state_;
};

// Work of known duration on a stream: a host callback that sleeps |hold| and
// then marks itself finished. "Everything before X is done" can then be
// checked against the ground truth: the probe must have finished.
class Probe : public ObservedCallback {
 public:
  explicit Probe(Stream& stream, std::chrono::milliseconds hold = std::chrono::milliseconds(0),
                 std::function<void(oar_status_t)> on_run = {});
  Probe(Device& device, oar_stream_t stream,
        std::chrono::milliseconds hold = std::chrono::milliseconds(0),
        std::function<void(oar_status_t)> on_run = {})
      : ObservedCallback(device, stream, hold, false, std::move(on_run)) {}
};

// Holds |stream|'s later work behind a host callback until release() (or
// destruction). The callback gives up after kWaitLimit, so that a test whose
// thread blocks behind the held work fails with a message instead of hanging.
// Requires OAR_DEVICE_FEATURE_HOST_CALLBACKS.
class Gate : public ObservedCallback {
 public:
  explicit Gate(Stream& stream);
  ~Gate() { open(); }
  // Opens the gate; fails the test if the gate had already given up (a call
  // on the test thread blocked until then, waiting for the held work).
  void release();
  // Opens the gate and never fails (for tests that check expired() first).
  void open();
  // Fails unless the gate's callback is running, i.e. really holds the
  // stream (it waits up to kWaitLimit for work ahead of it).
  void expect_holding(const std::string& context) const;
  bool expired() const;
};

// Waits for the device when a test ends, before its buffers are freed: a test
// declares it after the buffers and host memory its queued work uses, so that
// a test that fails early never frees memory under pending work.
struct SynchronizeOnExit {
  Device& device;
  ~SynchronizeOnExit() {
    try {
      device.synchronize();
    } catch (...) {
      // The test has failed already, or will say why.
    }
  }
};

// Fails unless |got| is |want|. For a failure code it also demands the
// message the plugin must report with it (policy P8) and returns it.
std::string expect_status(Device& device, oar_status_t got, oar_status_t want,
                          const std::string& call);

// Bytes (i + seed) % 251, so that offsets show in the values.
std::vector<uint8_t> pattern(size_t n, uint8_t seed);
// Bytes of 32-bit words that differ at every position of a large buffer:
// a chunk copied from or to the wrong offset shows, whatever the chunk size.
std::vector<uint8_t> large_pattern(size_t n, uint32_t seed);
// Fails naming the first differing byte.
void expect_bytes(const std::string& what, const std::vector<uint8_t>& got,
                  const std::vector<uint8_t>& want);
void expect_bytes(const std::string& what, const uint8_t* got, const uint8_t* want, size_t n);

// A host buffer with guard bytes on both sides of |size| usable bytes: a copy
// that writes before or after its destination changes them.
class GuardedHost {
 public:
  static constexpr size_t kGuard = 64;
  static constexpr uint8_t kGuardByte = 0xC3;
  explicit GuardedHost(size_t size, uint8_t fill = 0);
  uint8_t* data() { return bytes_.data() + kGuard; }
  size_t size() const { return bytes_.size() - 2 * kGuard; }
  std::vector<uint8_t> contents() const;
  // Fails if a guard byte changed, naming |what| wrote it.
  void expect_guards(const std::string& what) const;

 private:
  std::vector<uint8_t> bytes_;
};

// Whether the device's DLPack type makes DLTensor.data an address (kDLCPU,
// kDLCUDA, ...): then an allocation handle of DEVICE memory is one too (OAR
// exports the handle as data), and its alignment can be checked. For opaque
// types (kDLOpenCL, kDLVulkan, kDLExtDev) it cannot.
bool handles_are_addresses(const oar_device_properties_t& properties);

// A handle value no plugin returns, to check that out-params stay unchanged.
template <typename Handle>
Handle sentinel() {
  return reinterpret_cast<Handle>(uintptr_t(0x5A5A5A50));
}

// Registration of each part of the suite.
void register_lifecycle_tests(Registry& registry, const oar_device_properties_t& properties);
void register_memory_tests(Registry& registry, const oar_device_properties_t& properties);
void register_large_memory_tests(Registry& registry, const oar_device_properties_t& properties);
void register_ordering_tests(Registry& registry, const oar_device_properties_t& properties);
void register_queue_tests(Registry& registry, const oar_device_properties_t& properties);
void register_error_tests(Registry& registry, const oar_device_properties_t& properties);

}  // namespace oar::conformance::abi
