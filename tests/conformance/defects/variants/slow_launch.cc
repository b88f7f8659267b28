// Correct but slow to launch: every kernel call takes 0.65 s before it queues
// the kernel in stream order (a driver that compiles or ships each launch to
// a remote device). The execution tests must certify it: a slow call is not
// a call that waits for the work held ahead of it.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

bool every_kernel(const RealKernel&) { return true; }

oar_status_t slow_launch(const oar_kernel_call_t* call) {
  std::this_thread::sleep_for(std::chrono::milliseconds(650));
  return call_real(call);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, every_kernel, slow_launch); }

}  // namespace oar_defect
