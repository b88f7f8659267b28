// Correct, and starts helper processes when it initializes, as many drivers
// do: one forked without exec (it inherits every descriptor of the process,
// the certifier's result pipe included, and lives in its process group) and
// one daemon (fork, setsid, fork, exec: it leaves the process group). Both
// outlive the process that loaded the plugin. oar-conform must certify it
// without waiting for them, and leave neither behind.
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../shim.h"

namespace oar_defect {
namespace {

oar_plugin_initialize_fn g_real_initialize = nullptr;

// Only async-signal-safe calls after fork(): the process may have threads.
void start_helpers() {
  char name[] = "oar-helper-daemon";
  char hours[] = "3600";
  char* const argv[] = {name, hours, nullptr};
  if (::fork() == 0) {
    ::prctl(PR_SET_NAME, "oar-helper-fork", 0, 0, 0);
    while (true) ::pause();
  }
  const pid_t starter = ::fork();
  if (starter == 0) {
    ::setsid();
    if (::fork() == 0) ::execv("/bin/sleep", argv);
    ::_exit(0);
  }
  if (starter > 0) ::waitpid(starter, nullptr, 0);
}

oar_status_t initialize_with_helpers(const oar_host_services_t* host) {
  start_helpers();
  return g_real_initialize(host);
}

}  // namespace

void install(oar_plugin_api_t& table) {
  g_real_initialize = real->initialize;
  table.initialize = initialize_with_helpers;
}

}  // namespace oar_defect
