#include "core/loader/probe.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "core/loader/environment.h"
#include "core/loader/host_services.h"
#include "core/loader/text.h"

namespace oar::loader {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP, SIGSYS};

void write_all(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += size_t(n);
  }
}

// Sets |signal|'s action to the default through the system call itself: a
// sanitizer runtime intercepts sigaction() and keeps its own SIGSEGV handler
// (which reports and exits with status 1), and the probe wants the plain
// default. A zeroed kernel sigaction is SIG_DFL with no flags and an empty
// mask in every architecture's layout.
void reset_to_default(int signal) {
  unsigned char kernel_action[64] = {};
  if (syscall(SYS_rt_sigaction, signal, kernel_action, nullptr, size_t(_NSIG - 1) / 8) == 0) return;
  struct sigaction action {};
  action.sa_handler = SIG_DFL;
  sigemptyset(&action.sa_mask);
  sigaction(signal, &action, nullptr);
}

// In the child, before the plugin is touched.
void prepare_child() {
  sigset_t unblock;
  sigemptyset(&unblock);
  for (int signal : kFatalSignals) {
    reset_to_default(signal);
    sigaddset(&unblock, signal);
  }
  sigprocmask(SIG_UNBLOCK, &unblock, nullptr);
  struct rlimit no_core {};  // a crashing probe leaves no core file behind
  setrlimit(RLIMIT_CORE, &no_core);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  detail::quiet_logging();
}

std::string signal_text(int signal) {
  const char* abbreviation = sigabbrev_np(signal);
  const char* description = strsignal(signal);
  std::string text = abbreviation != nullptr ? std::string("SIG") + abbreviation
                                             : "signal " + std::to_string(signal);
  if (description != nullptr) text += std::string(" (") + description + ")";
  return text;
}

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", double(duration.count()) / 1000.0);
  return text;
}

}  // namespace

std::optional<std::chrono::milliseconds> parse_probe_timeout(const std::string& text) {
  if (text.empty() || text.find_first_not_of("0123456789.") != std::string::npos) {
    return std::nullopt;
  }
  char* end = nullptr;
  double seconds = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !(seconds > 0 && seconds <= 3600)) return std::nullopt;
  return std::chrono::milliseconds(std::max<long long>(1, std::llround(seconds * 1000)));
}

ProbeSettings probe_settings() {
  ProbeSettings settings;
  settings.enabled = environment_flag("OAR_PLUGIN_PROBE", false);
  if (auto text = get_environment("OAR_PLUGIN_PROBE_TIMEOUT")) {
    if (auto timeout = parse_probe_timeout(*text)) {
      settings.timeout = *timeout;
    } else {
      detail::log_line(OAR_LOG_LEVEL_WARNING, "core",
                       "OAR_PLUGIN_PROBE_TIMEOUT=\"" + clipped(*text, 64) +
                           "\" is not a number of seconds in (0, 3600]; using " +
                           seconds_text(settings.timeout));
    }
  }
  return settings;
}

Status run_in_probe_process(const std::string& subject,
                            const std::function<void(const ProbeStep&)>& work,
                            std::chrono::milliseconds timeout) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    return Status(OAR_STATUS_UNAVAILABLE,
                  "cannot probe " + subject + ": pipe: " + std::strerror(errno));
  }
  // Whatever the caller has buffered must not be written twice.
  std::fflush(nullptr);
  pid_t child = ::fork();
  if (child < 0) {
    int error = errno;
    ::close(pipe_fds[0]);
    ::close(pipe_fds[1]);
    return Status(OAR_STATUS_UNAVAILABLE,
                  "cannot probe " + subject + ": fork: " + std::strerror(error));
  }
  if (child == 0) {
    ::close(pipe_fds[0]);
    prepare_child();
    const int out = pipe_fds[1];
    ProbeStep step = [out](const char* name) {
      write_all(out, std::string("step ") + name + "\n");
    };
    try {
      work(step);
    } catch (...) {
      write_all(out, "step (an exception escaped the loader)\n");
      ::_exit(70);
    }
    write_all(out, "done\n");
    ::_exit(0);
  }
  ::close(pipe_fds[1]);

  std::string received;
  bool timed_out = false;
  bool exited = false;
  int wait_status = 0;
  bool end_of_pipe = false;
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    // The pipe's end does not mean the child's (a grandchild may hold it, the
    // plugin may close it), nor the reverse: poll in short slices and ask for
    // the child's status between them.
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    int slice = int(std::min<int64_t>(left.count(), end_of_pipe ? 10 : 100));
    pollfd poll_fd{pipe_fds[0], POLLIN, 0};
    if (::poll(&poll_fd, end_of_pipe ? 0 : 1, slice) > 0) {
      char buffer[256];
      ssize_t n = ::read(pipe_fds[0], buffer, sizeof(buffer));
      if (n > 0 && received.size() < 65536) received.append(buffer, size_t(n));
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) end_of_pipe = true;
    }
    if (::waitpid(child, &wait_status, WNOHANG) == child) {
      exited = true;
      break;
    }
  }
  if (timed_out) ::kill(child, SIGKILL);
  if (!exited) {
    while (::waitpid(child, &wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  // What the child wrote just before it ended.
  int flags = ::fcntl(pipe_fds[0], F_GETFL);
  ::fcntl(pipe_fds[0], F_SETFL, flags | O_NONBLOCK);
  char buffer[256];
  ssize_t n;
  while ((n = ::read(pipe_fds[0], buffer, sizeof(buffer))) > 0 && received.size() < 65536) {
    received.append(buffer, size_t(n));
  }
  ::close(pipe_fds[0]);

  std::string last_step;
  bool finished = false;
  size_t start = 0;
  while (start < received.size()) {
    size_t end = received.find('\n', start);
    if (end == std::string::npos) break;
    std::string line = received.substr(start, end - start);
    if (line.rfind("step ", 0) == 0) last_step = line.substr(5);
    if (line == "done") finished = true;
    start = end + 1;
  }
  if (!timed_out && finished && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0) {
    return Status();
  }
  std::string where = last_step.empty() ? "" : " in " + last_step;
  const std::string tail =
      " while it was loaded in a probe process (OAR_PLUGIN_PROBE); it is not loaded";
  if (timed_out) {
    return Status(OAR_STATUS_DEADLINE_EXCEEDED,
                  subject + " did not finish loading within " + seconds_text(timeout) + " (stuck" +
                      where + "; OAR_PLUGIN_PROBE_TIMEOUT sets the limit)" + tail);
  }
  if (WIFSIGNALED(wait_status)) {
    return Status(OAR_STATUS_INTERNAL,
                  subject + " crashed with " + signal_text(WTERMSIG(wait_status)) + where + tail);
  }
  return Status(OAR_STATUS_INTERNAL,
                subject + " ended the process with exit status " +
                    std::to_string(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : -1) + where +
                    tail);
}

}  // namespace oar::loader
