#include "conformance/harness/runner.h"

#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "cli/describe.h"

namespace oar::conformance {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kStatusNames[] = {"passed",        "failed",  "skipped",
                                        "known_failure", "crashed", "timeout"};
// How much of a dead child's output goes into the failed test's message.
constexpr size_t kOutputTailBytes = 4000;

double milliseconds_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Test messages are arbitrary bytes (plugin text); JSON must stay valid UTF-8.
std::string dump_line(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
}

// One JSON line to the parent. Written with write(2), unbuffered, so that
// every line sent before a crash arrives.
void send_line(int fd, const json& value) {
  const std::string line = dump_line(value);
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = ::write(fd, line.data() + sent, line.size() - sent);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // the parent is gone; nobody is left to tell
    sent += size_t(n);
  }
}

// How a child process ended.
struct ChildEnd {
  bool timed_out = false;
  int signal = 0;  // the signal that killed it; 0 when it exited
  int exit_code = 0;
  std::chrono::milliseconds timeout{0};
  std::string output;  // everything it printed

  bool clean() const { return !timed_out && signal == 0 && exit_code == 0; }

  std::string describe() const {
    std::string text;
    if (timed_out) {
      text = fmt::format("timeout: still running after {:.3g} s, killed", timeout.count() / 1e3);
    } else if (signal != 0) {
      const char* abbreviation = sigabbrev_np(signal);
      text =
          fmt::format("crashed: SIG{} ({})", abbreviation ? abbreviation : "?", strsignal(signal));
    } else {
      text = fmt::format("crashed: the process exited with status {}", exit_code);
    }
    if (output.empty()) return text;
    const size_t start = output.size() > kOutputTailBytes ? output.size() - kOutputTailBytes : 0;
    return text + "\n--- last output of the test process ---\n" + output.substr(start);
  }
};

class FileDescriptor {
 public:
  explicit FileDescriptor(int fd = -1) : fd_(fd) {}
  ~FileDescriptor() { reset(); }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

 private:
  int fd_;
};

std::string read_all(int fd) {
  std::string text;
  char chunk[8192];
  off_t offset = 0;
  ssize_t n;
  while ((n = ::pread(fd, chunk, sizeof(chunk), offset)) > 0) {
    text.append(chunk, size_t(n));
    offset += n;
  }
  return text;
}

// Feeds complete lines of |data| to |on_line|; keeps a partial last line.
void split_lines(std::string& pending, const char* data, size_t size,
                 const std::function<void(const json&)>& on_line) {
  pending.append(data, size);
  size_t newline;
  while ((newline = pending.find('\n')) != std::string::npos) {
    const std::string line = pending.substr(0, newline);
    pending.erase(0, newline + 1);
    json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
    // Anything else on the pipe is not ours (a plugin writing to a stray fd).
    if (value.is_object() && value.contains("event")) on_line(value);
  }
}

// Runs |body| in a forked child whose stdout and stderr are captured, hands
// every JSON line the child writes to its fd to |on_line|, and kills the
// child when it outlives |timeout|.
ChildEnd run_child(const std::function<void(int fd)>& body, std::chrono::milliseconds timeout,
                   const std::function<void(const json&)>& on_line, const std::string& log_path,
                   const std::string& label) {
  int pipe_fds[2];
  if (::pipe(pipe_fds) != 0) throw std::runtime_error(fmt::format("pipe: {}", strerror(errno)));
  FileDescriptor read_end(pipe_fds[0]);
  FileDescriptor write_end(pipe_fds[1]);
  FileDescriptor output(::memfd_create("oar-conform-output", 0));
  if (output.get() < 0) throw std::runtime_error(fmt::format("memfd_create: {}", strerror(errno)));

  std::fflush(nullptr);  // or the child would print the parent's buffered text again
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", strerror(errno)));
  if (pid == 0) {
    read_end.reset();
    ::dup2(output.get(), STDOUT_FILENO);
    ::dup2(output.get(), STDERR_FILENO);
    int code = 0;
    try {
      body(write_end.get());
    } catch (...) {
      code = 125;  // bodies catch what tests throw; this is a harness fault
    }
    std::fflush(nullptr);
    ::_exit(code);  // no atexit handlers or static destructors of the parent
  }
  write_end.reset();

  ChildEnd end;
  end.timeout = timeout;
  const auto deadline = Clock::now() + timeout;
  auto remaining_ms = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    return std::max<int64_t>(0, left.count());
  };
  std::string pending;
  bool eof = false;
  while (!eof && remaining_ms() > 0) {
    pollfd request{read_end.get(), POLLIN, 0};
    int ready = ::poll(&request, 1, int(std::min<int64_t>(remaining_ms(), 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char chunk[8192];
    ssize_t n = ::read(read_end.get(), chunk, sizeof(chunk));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      eof = true;
      break;
    }
    split_lines(pending, chunk, size_t(n), on_line);
  }
  // The pipe closes when the child exits; a child that closed it early still
  // gets the rest of its time to exit.
  int wait_status = 0;
  pid_t waited = 0;
  while ((waited = ::waitpid(pid, &wait_status, WNOHANG)) == 0 && remaining_ms() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (waited == 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &wait_status, 0);
    end.timed_out = true;
  } else if (WIFSIGNALED(wait_status)) {
    end.signal = WTERMSIG(wait_status);
  } else if (WIFEXITED(wait_status)) {
    end.exit_code = WEXITSTATUS(wait_status);
  }
  end.output = read_all(output.get());
  if (!log_path.empty() && !end.output.empty()) {
    std::ofstream log(log_path, std::ios::app);
    log << "=== " << label << " (pid " << pid << ") ===\n" << end.output;
    if (end.output.back() != '\n') log << "\n";
  }
  return end;
}

// The probe sends the record as `oar list --json` describes a loaded plugin.
PluginRecord plugin_record_from_json(const json& value) {
  PluginRecord record;
  record.name = value.at("name");
  record.manifest_path = value.at("manifest");
  record.library_path = value.at("library");
  record.state = PluginState::kLoaded;
  record.version = value.at("version");
  record.vendor = value.at("vendor");
  std::sscanf(value.at("abi_version").get<std::string>().c_str(), "%u.%u", &record.abi_major,
              &record.abi_minor);
  record.device_count = value.at("device_count");
  record.kernel_count = value.at("kernel_count");
  return record;
}

// The properties travel as their bytes: parent and child are the same binary.
std::string to_hex(const void* data, size_t size) {
  static const char kHex[] = "0123456789abcdef";
  std::string hex;
  for (size_t i = 0; i < size; ++i) {
    const uint8_t byte = static_cast<const uint8_t*>(data)[i];
    hex += kHex[byte >> 4];
    hex += kHex[byte & 0xf];
  }
  return hex;
}

void from_hex(const std::string& hex, void* data, size_t size) {
  if (hex.size() != 2 * size) throw std::runtime_error("malformed device properties");
  for (size_t i = 0; i < size; ++i) {
    static_cast<uint8_t*>(data)[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
}

void probe_child(int fd, const TargetFactory& factory) {
  try {
    Target target = factory();
    const Device& device = *target.device;
    const PluginRecord* record = nullptr;
    for (const auto& candidate : target.runtime->plugins()) {
      if (candidate.name == device.plugin_name()) record = &candidate;
    }
    if (record == nullptr) throw std::runtime_error("the device's plugin has no record");
    send_line(fd, {{"event", "target"},
                   {"plugin", cli::plugin_json(*record)},
                   {"device_name", device.name()},
                   {"device_index", device.index()},
                   {"properties", to_hex(&device.properties(), sizeof(device.properties()))}});
  } catch (const TargetError& e) {
    send_line(fd, {{"event", "target_error"}, {"kind", int(e.kind())}, {"message", e.what()}});
  } catch (const std::exception& e) {
    send_line(fd, {{"event", "target_error"},
                   {"kind", int(TargetError::Kind::kUnavailable)},
                   {"message", e.what()}});
  }
}

// Runs one test body and classifies how it ended.
json run_body(const TestCase& test, TestContext& context) {
  const auto start = Clock::now();
  Status status = Status::kPassed;
  std::string message;
  try {
    test.body(context);
  } catch (const TestSkip& e) {
    status = Status::kSkipped;
    message = e.what();
  } catch (const TestFailure& e) {
    status = Status::kFailed;
    message = e.what();
  } catch (const oar::Error& e) {
    status = Status::kFailed;
    message = fmt::format("oar::Error {}", e.what());
  } catch (const std::exception& e) {
    status = Status::kFailed;
    message = fmt::format("exception: {}", e.what());
  } catch (...) {
    status = Status::kFailed;
    message = "an exception that is not a std::exception";
  }
  return {{"event", "result"},
          {"id", test.id},
          {"status", status_name(status)},
          {"message", message},
          {"duration_ms", milliseconds_since(start)}};
}

void group_child(int fd, const TargetFactory& factory, const SuiteRegistrar& registrar,
                 const std::vector<std::string>& ids) {
  std::optional<Target> target;
  Registry registry;
  try {
    target = factory();
    registrar(registry, target->device->properties());
  } catch (const std::exception& e) {
    send_line(fd, {{"event", "setup_error"}, {"message", e.what()}});
    return;
  }
  std::map<std::string, const TestCase*> by_id;
  for (const auto& test : registry.tests()) by_id[test.id] = &test;
  TestContext context{*target->runtime, *target->device};
  for (const auto& id : ids) {
    send_line(fd, {{"event", "start"}, {"id", id}});
    auto found = by_id.find(id);
    if (found == by_id.end()) {
      send_line(fd, {{"event", "result"},
                     {"id", id},
                     {"status", "failed"},
                     {"message",
                      "not registered in the test process: the suite registered "
                      "different tests for the same device properties"},
                     {"duration_ms", 0}});
      continue;
    }
    send_line(fd, run_body(*found->second, context));
  }
  // Shut the runtime down here, not in _exit: a crash in teardown is a finding.
  target.reset();
}

// Runs the selected tests group by group and applies the expectations.
class GroupRunner {
 public:
  GroupRunner(const std::vector<TestCase>& tests, const TargetFactory& factory,
              const SuiteRegistrar& registrar, const RunOptions& options)
      : tests_(tests), factory_(factory), registrar_(registrar), options_(options) {
    results_.resize(tests.size());
    for (size_t i = 0; i < tests.size(); ++i) index_[tests[i].id] = i;
  }

  std::vector<TestResult> run() {
    std::vector<std::pair<std::string, std::vector<size_t>>> groups;
    std::map<std::string, size_t> group_index;
    for (size_t i = 0; i < tests_.size(); ++i) {
      if (const Expectation* unsupported = options_.expectations.find_unsupported(tests_[i].id)) {
        finish(i, Status::kSkipped, "unsupported: " + unsupported->reason, 0);
        continue;
      }
      // An empty group is a group of its own: the test shares a process with nothing.
      const std::string& name = tests_[i].group.empty() ? tests_[i].id : tests_[i].group;
      auto [it, added] = group_index.emplace(name, groups.size());
      if (added) groups.push_back({name, {}});
      groups[it->second].second.push_back(i);
    }
    for (const auto& [name, members] : groups) run_group(name, members);
    std::vector<TestResult> results;
    for (auto& result : results_) results.push_back(std::move(*result));
    for (auto& result : extra_results_) results.push_back(std::move(result));
    return results;
  }

 private:
  TestResult make_result(const TestCase& test, Status status, std::string message,
                         double duration_ms) const {
    return {test.id, test.area,          test.op,    test.dtype, test.group,
            status,  std::move(message), duration_ms};
  }

  // Known failures turn around here, so that every path (result line, crash,
  // timeout) gets the same treatment.
  void apply_known_failures(TestResult& result) const {
    const Expectation* known = options_.expectations.find_known_failure(result.id);
    if (known == nullptr) return;
    if (result.status == Status::kPassed) {
      result.status = Status::kFailed;
      result.message = "unexpectedly passed; remove it from known failures";
    } else if (is_failure(result.status)) {
      result.message = fmt::format("known failure ({}); {}: {}", known->reason,
                                   status_name(result.status), result.message);
      result.status = Status::kKnownFailure;
    }
  }

  void deliver(TestResult& result) {
    apply_known_failures(result);
    if (options_.on_result) options_.on_result(result);
  }

  void finish(size_t index, Status status, std::string message, double duration_ms) {
    TestResult result = make_result(tests_[index], status, std::move(message), duration_ms);
    deliver(result);
    results_[index] = std::move(result);
  }

  void run_group(const std::string& name, std::vector<size_t> pending) {
    while (!pending.empty()) {
      std::vector<std::string> ids;
      for (size_t index : pending) ids.push_back(tests_[index].id);
      std::optional<size_t> running;
      Clock::time_point running_since;
      std::set<size_t> finished;
      std::string setup_error;
      auto on_line = [&](const json& line) {
        const std::string event = line.value("event", "");
        if (event == "setup_error") {
          setup_error = line.value("message", "");
          return;
        }
        auto found = index_.find(line.value("id", ""));
        if (found == index_.end()) return;
        const size_t index = found->second;
        if (event == "start") {
          running = index;
          running_since = Clock::now();
          if (options_.on_start) options_.on_start(tests_[index]);
        } else if (event == "result") {
          running.reset();
          finished.insert(index);
          finish(index, parse_status(line.value("status", "failed")), line.value("message", ""),
                 line.value("duration_ms", 0.0));
        }
      };
      const ChildEnd end =
          run_child([&](int fd) { group_child(fd, factory_, registrar_, ids); }, options_.timeout,
                    on_line, options_.child_output_log, "group " + name);

      std::vector<size_t> left;
      for (size_t index : pending) {
        if (finished.count(index) == 0 && index != running) left.push_back(index);
      }
      if (!setup_error.empty()) {
        for (size_t index : left) {
          finish(index, Status::kFailed, "could not open the device under test: " + setup_error, 0);
        }
        return;
      }
      if (running) {
        // The test that was running pays for the crash; the rest of the group
        // goes on in a fresh process.
        finish(*running, end.timed_out ? Status::kTimeout : Status::kCrashed, end.describe(),
               milliseconds_since(running_since));
        pending = std::move(left);
        continue;
      }
      if (left.empty()) {
        if (!end.clean()) record_shutdown_crash(name, end);
        return;
      }
      // Died before its first test: opening the device or registering the tests
      // crashed, and would again in a fresh process.
      for (size_t index : left) {
        finish(
            index, end.timed_out ? Status::kTimeout : Status::kCrashed,
            "the test process died before running it (while opening the device): " + end.describe(),
            0);
      }
      return;
    }
  }

  // Every test of the group finished, then the runtime's shutdown (closing the
  // device, finalize, unload) killed the process.
  void record_shutdown_crash(const std::string& group, const ChildEnd& end) {
    TestResult result{group + "/shutdown",
                      "abi",
                      "",
                      "",
                      group,
                      end.timed_out ? Status::kTimeout : Status::kCrashed,
                      "after the group's tests, shutting the runtime down " + end.describe(),
                      0};
    deliver(result);
    extra_results_.push_back(std::move(result));
  }

  const std::vector<TestCase>& tests_;
  const TargetFactory& factory_;
  const SuiteRegistrar& registrar_;
  const RunOptions& options_;
  std::map<std::string, size_t> index_;
  std::vector<std::optional<TestResult>> results_;
  std::vector<TestResult> extra_results_;
};

}  // namespace

const char* status_name(Status status) { return kStatusNames[int(status)]; }

Status parse_status(const std::string& name) {
  for (int i = 0; i < int(std::size(kStatusNames)); ++i) {
    if (name == kStatusNames[i]) return Status(i);
  }
  throw std::invalid_argument("unknown test status " + name);
}

int severity(Status status) {
  switch (status) {
    case Status::kPassed:
      return 0;
    case Status::kSkipped:
      return 1;
    case Status::kKnownFailure:
      return 2;
    case Status::kFailed:
      return 3;
    case Status::kTimeout:
      return 4;
    case Status::kCrashed:
      return 5;
  }
  return 5;
}

TargetInfo probe(const TargetFactory& factory, std::chrono::milliseconds timeout) {
  std::optional<TargetInfo> info;
  std::optional<TargetError> error;
  auto on_line = [&](const json& line) {
    const std::string event = line.value("event", "");
    if (event == "target_error") {
      error.emplace(TargetError::Kind(line.value("kind", 0)), line.value("message", ""));
    } else if (event == "target") {
      TargetInfo target;
      target.plugin = plugin_record_from_json(line.at("plugin"));
      target.device_name = line.at("device_name");
      target.device_index = line.at("device_index");
      from_hex(line.at("properties"), &target.properties, sizeof(target.properties));
      info = std::move(target);
    }
  };
  const ChildEnd end =
      run_child([&](int fd) { probe_child(fd, factory); }, timeout, on_line, "", "probe");
  if (error) throw *error;
  // A crash at shutdown after the target was described is left to the tests.
  if (info) return *info;
  throw TargetError(TargetError::Kind::kCrashed,
                    "the plugin's process died while loading it: " + end.describe());
}

std::vector<TestCase> select_tests(const SuiteRegistrar& registrar,
                                   const oar_device_properties_t& properties,
                                   const std::string& filter) {
  Registry registry;
  registrar(registry, properties);
  std::set<std::string> seen;
  std::vector<TestCase> selected;
  for (const auto& test : registry.tests()) {
    if (!seen.insert(test.id).second) throw std::runtime_error("duplicate test id " + test.id);
    if (matches_filter(filter, test.id)) selected.push_back(test);
  }
  return selected;
}

std::vector<TestResult> run_tests(const std::vector<TestCase>& tests, const TargetFactory& factory,
                                  const SuiteRegistrar& registrar, const RunOptions& options) {
  return GroupRunner(tests, factory, registrar, options).run();
}

}  // namespace oar::conformance
