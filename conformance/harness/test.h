// The contract between the conformance suites and the harness that runs them.
//
// A suite registers test cases; each case has a stable id
// ("ops/add/f32/broadcast"), an area ("abi", "ops", "models"), the operator and
// dtype it covers (empty when none) and a group: the harness runs each group
// in its own child process with a timeout, so a plugin that crashes or hangs
// fails that group's tests (status crashed/timeout) and the run goes on.
//
// A test body reports through exceptions: it returns normally to pass, throws
// TestFailure to fail, TestSkip to skip (with the reason: only
// capability-driven skips, never plugin names), and any oar::Error or other
// std::exception counts as a failure with its message.
#pragma once

#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "oar/oar.hpp"

namespace oar::conformance {

class TestFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class TestSkip : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// What a test body works with: the device under test (opened in the child
// process that runs the test) and its runtime.
struct TestContext {
  Runtime& runtime;
  Device& device;
};

struct TestCase {
  std::string id;     // unique, '/'-separated; what --filter globs match
  std::string area;   // "abi", "ops", "models"
  std::string op;     // the operator covered, or ""
  std::string dtype;  // "f32", ... or ""
  std::string group;  // tests of one group share a child process
  std::function<void(TestContext&)> body;
};

// Suites add their cases here. |properties| are those of the device under
// test: suites select cases from capabilities (dtypes, features, memory kinds).
class Registry {
 public:
  void add(TestCase test) { tests_.push_back(std::move(test)); }
  const std::vector<TestCase>& tests() const { return tests_; }

 private:
  std::vector<TestCase> tests_;
};

// Each suite's entry point (conformance/suites/<area>/).
void register_abi_suite(Registry& registry, const oar_device_properties_t& properties);
void register_op_suite(Registry& registry, const oar_device_properties_t& properties);
void register_model_suite(Registry& registry, const oar_device_properties_t& properties);

// The suite's version, written into every report.
inline constexpr const char* kSuiteVersion = "1.0.0";

// Helpers for test bodies.
[[noreturn]] inline void fail(const std::string& message) { throw TestFailure(message); }
[[noreturn]] inline void skip(const std::string& reason) { throw TestSkip(reason); }
inline void expect(bool condition, const std::string& message) {
  if (!condition) fail(message);
}

}  // namespace oar::conformance
