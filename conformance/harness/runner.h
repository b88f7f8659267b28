// The runner: selects the tests a device is asked to pass and runs them in
// child processes, so that a plugin that crashes or hangs costs the test it
// was running and nothing else.
//
// Nothing here creates a Runtime in the calling process: plugins may start
// threads, and fork() copies only the calling thread. Every Runtime lives in a
// child: probe() opens the target once to learn what it is, and run() forks a
// child per test group (TestCase::group; an empty group is a group of its own)
// that opens the target again, rebuilds the registry from the device's
// properties and runs the group's tests in order. The child writes one JSON
// line per event to a pipe: {"event":"start","id":...} before a test and
// {"event":"result",...} after it. A child that dies or outlives the timeout
// fails the test it had started (crashed, with the signal's name, or timeout);
// the group's tests after it run in a fresh child.
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

// What probe() learnt about the target.
struct TargetInfo {
  PluginRecord plugin;
  std::string device_name;  // "cpu:0"
  int32_t device_index = 0;
  oar_device_properties_t properties{};
};

struct RunOptions {
  // Wall-clock limit of one child process (one group, or what is left of it
  // after a crash).
  std::chrono::milliseconds timeout{std::chrono::seconds(120)};
  Expectations expectations;
  // Everything the children print (plugin logs, sanitizer reports) is
  // appended here; discarded when empty. The tail of a crashed child's output
  // goes into the crashed test's message either way.
  std::string child_output_log;
  // Progress: a test started in a child, and a test's final result.
  std::function<void(const TestCase& test)> on_start;
  std::function<void(const TestResult& result)> on_result;
};

// Opens the target in a child process and reports what it is. Throws
// TargetError (the factory's, or kCrashed when the child died or hung).
TargetInfo probe(const TargetFactory& factory, std::chrono::milliseconds timeout);

// The tests |registrar| gives a device of |properties| that |filter| selects,
// in registration order. Throws std::runtime_error on a duplicate id.
std::vector<TestCase> select_tests(const SuiteRegistrar& registrar,
                                   const oar_device_properties_t& properties,
                                   const std::string& filter);

// Runs |tests| (from select_tests) group by group in child processes and
// returns one result per test, in the order of |tests|, plus one result
// "<group>/shutdown" for a child that crashed after all its tests finished.
std::vector<TestResult> run_tests(const std::vector<TestCase>& tests, const TargetFactory& factory,
                                  const SuiteRegistrar& registrar, const RunOptions& options);

}  // namespace oar::conformance
