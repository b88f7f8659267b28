// Isolation for loading plugins (OAR_PLUGIN_PROBE=1, and always in `oar
// list`): before a plugin is loaded into this process it is loaded once in a
// child process, so that one that crashes, ends the process or hangs while it
// loads is named and skipped instead of taking the caller down with it.
//
// The child is forked (not exec'd) from the caller; in it every signal that
// kills is reset to its default action first. Libraries already loaded may
// have replaced those actions: LLVM (loaded by PoCL, Mesa) installs handlers
// for SIGSEGV, SIGBUS, SIGILL, SIGABRT and SIGTRAP that return for a signal
// that was sent rather than caused by a fault, so a plugin that calls
// raise(SIGSEGV) carries on as if nothing happened; PoCL's SIGFPE handler
// steps over an integer division by zero. With the defaults back a crash ends
// the probe, and the parent reads how.
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "core/util/status.h"

namespace oar::loader {

struct ProbeSettings {
  bool enabled = false;
  std::chrono::milliseconds timeout{60000};
};

// OAR_PLUGIN_PROBE (a yes/no flag, default no) and OAR_PLUGIN_PROBE_TIMEOUT
// (seconds, default 60), read now; a bad timeout is logged and the default used.
ProbeSettings probe_settings();

// A timeout in seconds, "2" or "0.5", in (0, 3600]; nothing otherwise.
std::optional<std::chrono::milliseconds> parse_probe_timeout(const std::string& text);

// Tells the parent which step the probe has reached ("initialize"); a crash
// or hang is attributed to the last one reported.
using ProbeStep = std::function<void(const char* step)>;

// Runs |work| in a child process and waits for it, at most |timeout|. OK when
// it returned normally; otherwise INTERNAL for a child that died of a signal
// or ended the process itself, DEADLINE_EXCEEDED (the child is killed) for one
// that did not finish, each message naming |subject|, the signal or exit
// status and the last step; UNAVAILABLE if no child could be made. The
// child's stdout goes to stderr, so a probe never writes into the caller's
// output.
Status run_in_probe_process(const std::string& subject,
                            const std::function<void(const ProbeStep&)>& work,
                            std::chrono::milliseconds timeout);

}  // namespace oar::loader
