// The runner: selects the tests a device is asked to pass and runs them in
// child processes, so that a plugin that crashes or hangs costs the test it
// was running and nothing else.
//
// Nothing here creates a Runtime in the calling process: plugins may start
// threads, and fork() copies only the calling thread. Every Runtime lives in a
// child: probe() opens the target once to learn what it is and how fast it
// answers, and run() forks a child per test group (TestCase::group; an empty
// group is a group of its own) that opens the target again, rebuilds the
// registry from the device's properties and runs the group's tests in order.
// The child writes one JSON line per event to a pipe: {"event":"start","id":...}
// before a test and {"event":"result",...} after it.
//
// Timeouts belong to one test, not to a group: every event restarts the
// clock, so opening the device, each test, and closing the device afterwards
// each get the whole limit (RunOptions::timeout, calibrated by test_timeout()
// from the device's measured speed). A child that dies or outlives the limit
// fails the test it had started (crashed, with the signal's name, or timeout);
// the group's tests after it run in a fresh child.
//
// The parent waits for the child process itself (a pidfd), never for the end
// of the pipe: a plugin may start helper processes that inherit the pipe and
// outlive the child. Each child leads its own process group; when it ends (or
// is killed), whatever the plugin started is killed with it and reaped. The
// calling process becomes a child subreaper, so that helpers that left the
// group (daemons) are reparented to it and killed too: probe() and run_tests()
// must be called from a process that has no child processes of its own.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "conformance/harness/expectations.h"
#include "conformance/harness/test.h"
#include "oar/oar.hpp"

namespace oar::conformance {

enum class Status { kPassed, kFailed, kSkipped, kKnownFailure, kCrashed, kTimeout };

// "passed", "failed", "skipped", "known_failure", "crashed", "timeout".
const char* status_name(Status status);
// Throws std::invalid_argument for any other name.
Status parse_status(const std::string& name);
// Orders statuses from best (passed) to worst (crashed), for summaries.
int severity(Status status);
// Whether |status| denies certification.
inline bool is_failure(Status status) {
  return status == Status::kFailed || status == Status::kCrashed || status == Status::kTimeout;
}

struct TestResult {
  std::string id;
  std::string area;
  std::string op;
  std::string dtype;
  std::string group;
  Status status = Status::kFailed;
  std::string message;  // the failure, the skip reason; empty when passed
  double duration_ms = 0;
  // Skipped because the plugin's expectations mark it unsupported (not for a
  // capability the device lacks): a gap in the profile's coverage.
  bool unsupported = false;
};

// The device under test, opened in a child process.
struct Target {
  std::unique_ptr<Runtime> runtime;
  Device* device = nullptr;
};

// Opens the target; runs in child processes only. Throws TargetError when the
// plugin or device is not there.
using TargetFactory = std::function<Target()>;
// Fills |registry| with the tests for a device of |properties|.
using SuiteRegistrar =
    std::function<void(Registry& registry, const oar_device_properties_t& properties)>;

class TargetError : public std::runtime_error {
 public:
  enum class Kind {
    kUnavailable,  // plugin not found, skipped by the loader, no such device
    kNoDevices,    // the plugin loaded and serves zero devices
    kCrashed,      // the child died or hung while loading the plugin
  };
  TargetError(Kind kind, const std::string& message) : std::runtime_error(message), kind_(kind) {}
  Kind kind() const { return kind_; }

 private:
  Kind kind_;
};

// How fast the device answers, measured by probe() in its child (the fastest
// of a warm-up and two timed runs; of a warm-up and one when the warm-up took
// 50 ms or more).
struct DeviceSpeed {
  // A 4-byte host-to-device copy and a stream synchronize, in milliseconds;
  // negative when it could not be measured.
  double copy_round_trip_ms = -1;
  // An f32 add of 2^20 elements and a stream synchronize; negative when it
  // could not be measured (no kernel, an error, a hang).
  double kernel_round_trip_ms = -1;
  // Why a measurement is missing; empty when both were taken.
  std::string note;

  // The slower of the two round trips; 0 when neither was measured.
  double unit_ms() const;
};

// How many device round trips one test may need on top of the base limit: a
// test makes a handful of copies, kernels and synchronizations (a model a few
// dozen), so a device that is slow but correct finishes each test well within
// base + kRoundTripsPerTest x round trip, and a hang is still caught.
inline constexpr int kRoundTripsPerTest = 100;

// The limit of one test on a device of |speed|: |base| (the limit on a fast
// device) + kRoundTripsPerTest x speed.unit_ms().
std::chrono::milliseconds test_timeout(std::chrono::milliseconds base, const DeviceSpeed& speed);

// What probe() learnt about the target.
struct TargetInfo {
  PluginRecord plugin;
  std::string device_name;  // "cpu:0"
  int32_t device_index = 0;
  oar_device_properties_t properties{};
  DeviceSpeed speed;
};

struct RunOptions {
  // Wall-clock limit of one test; the same limit applies to opening the
  // device before a group's first test and to closing it after its last.
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  Expectations expectations;
  // Everything the children print (plugin logs, sanitizer reports) is
  // appended here; discarded when empty. The tail of a crashed child's output
  // goes into the crashed test's message either way.
  std::string child_output_log;
  // Progress: a test started in a child, and a test's final result.
  std::function<void(const TestCase& test)> on_start;
  std::function<void(const TestResult& result)> on_result;
};

// Opens the target in a child process, reports what it is and measures its
// speed. |timeout| limits loading the plugin and closing it again; each
// measurement gets at least 30 s (a device's speed is not known before).
// Throws TargetError (the factory's, or kCrashed when the child died or hung
// before describing the target); a measurement that failed or hung leaves its
// DeviceSpeed field negative, with the reason in DeviceSpeed::note.
TargetInfo probe(const TargetFactory& factory, std::chrono::milliseconds timeout);

// The tests |registrar| gives a device of |properties| that |filter| selects,
// in registration order. Throws std::runtime_error on a duplicate id.
std::vector<TestCase> select_tests(const SuiteRegistrar& registrar,
                                   const oar_device_properties_t& properties,
                                   const std::string& filter);

// Runs |tests| (from select_tests) group by group in child processes and
// returns one result per test, in the order of |tests|, plus one result
// "<group>/shutdown" for a child that crashed or hung after all its tests
// finished (while closing the device).
std::vector<TestResult> run_tests(const std::vector<TestCase>& tests, const TargetFactory& factory,
                                  const SuiteRegistrar& registrar, const RunOptions& options);

}  // namespace oar::conformance
