#include "conformance/harness/runner.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "cli/describe.h"
#include "oar/ops.hpp"

namespace oar::conformance {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

constexpr const char* kStatusNames[] = {"passed",        "failed",  "skipped",
                                        "known_failure", "crashed", "timeout"};
// How much of a dead child's output goes into the failed test's message.
constexpr size_t kOutputTailBytes = 4000;
// The least time one speed measurement of the probe gets.
constexpr std::chrono::milliseconds kMeasurementTimeout{std::chrono::seconds(30)};

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
  bool unkillable = false;  // still there after SIGKILL (uninterruptible sleep): abandoned
  int signal = 0;           // the signal that killed it; 0 when it exited
  int exit_code = 0;
  std::chrono::milliseconds timeout{0};
  std::string output;  // everything it printed

  bool clean() const { return !timed_out && signal == 0 && exit_code == 0; }

  std::string describe() const {
    std::string text;
    if (timed_out) {
      text = fmt::format("timeout: still running after {:.3g} s (the limit of one test), killed",
                         timeout.count() / 1e3);
      if (unkillable) text += "; it did not die and was abandoned";
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
// Returns how many of our lines (JSON objects with an "event") it delivered.
size_t split_lines(std::string& pending, const char* data, size_t size,
                   const std::function<void(const json&)>& on_line) {
  pending.append(data, size);
  size_t delivered = 0;
  size_t newline;
  while ((newline = pending.find('\n')) != std::string::npos) {
    const std::string line = pending.substr(0, newline);
    pending.erase(0, newline + 1);
    json value = json::parse(line, nullptr, /*allow_exceptions=*/false);
    // Anything else on the pipe is not ours (a plugin writing to a stray fd).
    if (!value.is_object() || !value.contains("event")) continue;
    try {
      on_line(value);
      ++delivered;
    } catch (const std::exception&) {
      // A line of the wrong shape (a plugin scribbling over the child's
      // memory): ignored; the test it concerns ends without a result.
    }
  }
  return delivered;
}

// The test child that is running, for the signal handler below.
std::atomic<pid_t> g_running_child{0};

// SIGINT, SIGTERM, SIGHUP: each child leads its own process group, so the
// terminal's signals do not reach it; take it down before dying.
void kill_running_child_and_die(int signal) {
  const pid_t child = g_running_child.load();
  if (child > 0) ::kill(-child, SIGKILL);
  ::signal(signal, SIG_DFL);
  ::raise(signal);
}

void install_process_guards() {
  static std::once_flag once;
  std::call_once(once, [] {
    // Orphans of a test process (helpers that left its process group) become
    // our children, to be killed and reaped.
    ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction current {};
      if (::sigaction(signal, nullptr, &current) != 0 || current.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = kill_running_child_and_die;
      sigemptyset(&action.sa_mask);
      ::sigaction(signal, &action, nullptr);
    }
  });
}

// Whether |pid| (our child) has ended, without reaping it: a zombie keeps its
// process group id, so that the group can still be killed safely.
bool has_exited(int pidfd, pid_t pid, int wait_ms) {
  if (pidfd >= 0) {
    pollfd request{pidfd, POLLIN, 0};
    int ready;
    while ((ready = ::poll(&request, 1, wait_ms)) < 0 && errno == EINTR) {
    }
    return ready > 0;
  }
  const auto until = Clock::now() + std::chrono::milliseconds(wait_ms);
  while (true) {
    siginfo_t info{};
    if (::waitid(P_PID, id_t(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
      return true;
    }
    if (Clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// Every process whose parent is this one (/proc/<pid>/stat, field 4).
std::vector<pid_t> child_processes() {
  std::vector<pid_t> children;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return children;
  const pid_t self = ::getpid();
  while (const dirent* entry = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(entry->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    // A process that exits while its stat is read makes read() fail with
    // ESRCH, on which libstdc++'s filebuf throws whatever the stream's
    // exception mask: such a process is no child any more.
    std::string text;
    try {
      std::ifstream stat(fmt::format("/proc/{}/stat", pid));
      text.assign(std::istreambuf_iterator<char>(stat), std::istreambuf_iterator<char>());
    } catch (const std::exception&) {
      continue;
    }
    const size_t name_end = text.rfind(')');  // the name may hold spaces and ')'
    if (name_end == std::string::npos) continue;
    char state = 0;
    long parent = 0;
    if (std::sscanf(text.c_str() + name_end + 1, " %c %ld", &state, &parent) == 2 &&
        parent == self) {
      children.push_back(pid_t(pid));
    }
  }
  ::closedir(proc);
  return children;
}

// Kills and reaps what a test process left behind: the rest of its process
// group (helpers the plugin started), and any other child of ours (helpers
// that left the group, reparented to us as the subreaper). The runner has no
// other children: the test process itself was reaped before this.
void kill_leftovers(pid_t group) {
  ::kill(-group, SIGKILL);
  const auto until = Clock::now() + std::chrono::seconds(5);
  while (true) {
    for (pid_t child : child_processes()) ::kill(child, SIGKILL);
    while (::waitpid(-1, nullptr, WNOHANG) > 0) {
    }
    if (child_processes().empty() || Clock::now() >= until) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

// Runs |body| in a forked child whose stdout and stderr are captured, hands
// every JSON line the child writes to its fd to |on_line|, and kills the
// child when |timeout| passes without a line: each line restarts the clock
// (with the value |timeout| has then: on_line may change it for what follows).
ChildEnd run_child(const std::function<void(int fd)>& body,
                   const std::chrono::milliseconds& timeout,
                   const std::function<void(const json&)>& on_line, const std::string& log_path,
                   const std::string& label) {
  install_process_guards();
  // Close-on-exec: a helper the plugin executes does not hold our pipe open.
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    throw std::runtime_error(fmt::format("pipe2: {}", strerror(errno)));
  }
  FileDescriptor read_end(pipe_fds[0]);
  FileDescriptor write_end(pipe_fds[1]);
  FileDescriptor output(::memfd_create("oar-conform-output", MFD_CLOEXEC));
  if (output.get() < 0) throw std::runtime_error(fmt::format("memfd_create: {}", strerror(errno)));

  std::fflush(nullptr);  // or the child would print the parent's buffered text again
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw std::runtime_error(fmt::format("fork: {}", strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    // If oar-conform is killed outright, its test process goes too.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
    if (::getppid() != parent) ::_exit(126);
    for (int signal : {SIGINT, SIGTERM, SIGHUP}) ::signal(signal, SIG_DFL);
    read_end.reset();
    // Not the terminal's: the child is in a background process group.
    const int nothing = ::open("/dev/null", O_RDONLY);
    if (nothing > STDIN_FILENO) {
      ::dup2(nothing, STDIN_FILENO);
      ::close(nothing);
    }
    // dup2 leaves the copies inheritable: helpers keep printing to the log.
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
  ::setpgid(pid, pid);  // as the child does: whichever runs first wins the race
  g_running_child.store(pid);
  write_end.reset();
  FileDescriptor process(int(::syscall(SYS_pidfd_open, pid, 0)));
  ::fcntl(read_end.get(), F_SETFL, ::fcntl(read_end.get(), F_GETFL) | O_NONBLOCK);

  ChildEnd end;
  auto deadline = Clock::now() + timeout;
  std::string pending;
  bool pipe_open = true;
  // Reads what the pipe holds now; false once every writer has closed it.
  auto drain = [&] {
    char chunk[8192];
    while (true) {
      const ssize_t n = ::read(read_end.get(), chunk, sizeof(chunk));
      if (n > 0) {
        if (split_lines(pending, chunk, size_t(n), on_line) > 0) deadline = Clock::now() + timeout;
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0;  // EAGAIN: open, nothing more yet
    }
  };
  bool exited = false;
  while (!exited) {
    const auto now = Clock::now();
    if (now >= deadline) {
      end.timed_out = true;
      end.timeout = timeout;  // the limit of the step that overran
      break;
    }
    int wait_ms = int(std::min<int64_t>(
        std::chrono::ceil<std::chrono::milliseconds>(deadline - now).count(), 1000));
    pollfd requests[2];
    nfds_t count = 0;
    if (pipe_open) requests[count++] = {read_end.get(), POLLIN, 0};
    if (process.get() >= 0) {
      requests[count++] = {process.get(), POLLIN, 0};
    } else {
      wait_ms = std::min(wait_ms, 10);  // no pidfd: look at the child now and then
    }
    if (count > 0) {
      ::poll(requests, count, wait_ms);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(wait_ms, 10)));
    }
    if (pipe_open) pipe_open = drain();
    exited = has_exited(process.get(), pid, 0);
  }
  if (end.timed_out) {
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);  // in case it never got its own group
    if (!has_exited(process.get(), pid, 10000)) end.unkillable = true;
  }
  // Lines written before the end are in the pipe; a helper holding its write
  // end must not make us wait for more.
  if (pipe_open) drain();
  int wait_status = 0;
  if (!end.unkillable) {
    ::kill(-pid, SIGKILL);  // helpers in its group, while the zombie holds the group id
    while (::waitpid(pid, &wait_status, 0) < 0 && errno == EINTR) {
    }
    kill_leftovers(pid);
  }
  g_running_child.store(0);
  if (!end.timed_out && WIFSIGNALED(wait_status)) {
    end.signal = WTERMSIG(wait_status);
  } else if (!end.timed_out && WIFEXITED(wait_status)) {
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

// How long |step| takes, in milliseconds: the fastest of a warm-up and two
// timed runs, or of a warm-up and one run when the warm-up took 50 ms or more
// (a slow device pays for each run; a first run that compiled its kernel is
// not the device's speed).
double fastest_ms(const std::function<void()>& step) {
  auto timed = [&] {
    const auto start = Clock::now();
    step();
    return milliseconds_since(start);
  };
  const double warm_up = timed();
  if (warm_up >= 50) return std::min(warm_up, timed());
  return std::min(timed(), timed());
}

// Measures the device's round trips (see DeviceSpeed), one line each.
void measure_speed(int fd, Device& device) {
  Stream& stream = device.default_stream();
  try {
    Buffer buffer = device.allocate(256);
    const uint32_t word = 0x4f4152;
    const double ms = fastest_ms([&] {
      stream.copy_from_host(buffer, 0, &word, sizeof(word));
      stream.synchronize();
    });
    send_line(fd, {{"event", "speed"}, {"copy_round_trip_ms", ms}});
  } catch (const std::exception& e) {
    send_line(fd, {{"event", "speed"}, {"note", fmt::format("copy round trip: {}", e.what())}});
    return;
  }
  try {
    const std::vector<float> zeros(size_t(1) << 20, 0.0f);
    Tensor a = Tensor::empty(device, {int64_t(zeros.size())}, dtype::f32);
    Tensor b = Tensor::empty(device, {int64_t(zeros.size())}, dtype::f32);
    a.copy_from_host(stream, zeros.data());
    b.copy_from_host(stream, zeros.data());
    stream.synchronize();
    const double ms = fastest_ms([&] {
      Tensor sum = ops::add(stream, a, b);
      stream.synchronize();
    });
    send_line(fd, {{"event", "speed"}, {"kernel_round_trip_ms", ms}});
  } catch (const std::exception& e) {
    send_line(fd, {{"event", "speed"}, {"note", fmt::format("f32 add round trip: {}", e.what())}});
  }
}

void probe_child(int fd, const TargetFactory& factory) {
  std::optional<Target> target;
  try {
    target = factory();
    Device& device = *target->device;
    const PluginRecord* record = nullptr;
    for (const auto& candidate : target->runtime->plugins()) {
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
    return;
  } catch (const std::exception& e) {
    send_line(fd, {{"event", "target_error"},
                   {"kind", int(TargetError::Kind::kUnavailable)},
                   {"message", e.what()}});
    return;
  }
  measure_speed(fd, *target->device);
  send_line(fd, {{"event", "done"}});
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
        finish(i, Status::kSkipped, "unsupported: " + unsupported->reason, 0, true);
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
    return {test.id, test.area,          test.op,     test.dtype, test.group,
            status,  std::move(message), duration_ms, false};
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

  void finish(size_t index, Status status, std::string message, double duration_ms,
              bool unsupported = false) {
    TestResult result = make_result(tests_[index], status, std::move(message), duration_ms);
    result.unsupported = unsupported;
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
                      0,
                      false};
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

double DeviceSpeed::unit_ms() const {
  return std::max({0.0, copy_round_trip_ms, kernel_round_trip_ms});
}

std::chrono::milliseconds test_timeout(std::chrono::milliseconds base, const DeviceSpeed& speed) {
  return base + std::chrono::milliseconds(int64_t(std::ceil(kRoundTripsPerTest * speed.unit_ms())));
}

TargetInfo probe(const TargetFactory& factory, std::chrono::milliseconds timeout) {
  std::optional<TargetInfo> info;
  std::optional<TargetError> error;
  DeviceSpeed speed;
  // Loading the plugin and closing it get |timeout|; a measurement takes a
  // round trip or three on a device whose speed is not known yet.
  std::chrono::milliseconds limit = timeout;
  auto on_line = [&](const json& line) {
    const std::string event = line.value("event", "");
    limit = event == "done" ? timeout : std::max(timeout, kMeasurementTimeout);
    if (event == "target_error") {
      error.emplace(TargetError::Kind(line.value("kind", 0)), line.value("message", ""));
    } else if (event == "target") {
      TargetInfo target;
      target.plugin = plugin_record_from_json(line.at("plugin"));
      target.device_name = line.at("device_name");
      target.device_index = line.at("device_index");
      from_hex(line.at("properties"), &target.properties, sizeof(target.properties));
      info = std::move(target);
    } else if (event == "speed") {
      speed.copy_round_trip_ms = line.value("copy_round_trip_ms", speed.copy_round_trip_ms);
      speed.kernel_round_trip_ms = line.value("kernel_round_trip_ms", speed.kernel_round_trip_ms);
      if (line.contains("note")) speed.note = line.value("note", "");
    }
  };
  const ChildEnd end =
      run_child([&](int fd) { probe_child(fd, factory); }, limit, on_line, "", "probe");
  if (error) throw *error;
  if (!info) {
    throw TargetError(TargetError::Kind::kCrashed,
                      "the plugin's process died while loading it: " + end.describe());
  }
  // A crash at shutdown after the target was described is left to the tests;
  // one during a measurement is noted.
  if (speed.note.empty() && (speed.copy_round_trip_ms < 0 || speed.kernel_round_trip_ms < 0)) {
    speed.note = "the measurement did not finish: " + end.describe();
  }
  info->speed = speed;
  return *info;
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
