// Correct but synchronous: every kernel call first waits until the work
// queued on its stream is done, then runs the kernel and waits for it too (as
// CUDA_LAUNCH_BLOCKING=1 does). Kernels run in stream order; the execution
// tests must certify it, though a gate ahead of the kernel then holds the
// calling thread until the gate stops holding by itself.
#include "../shim.h"

namespace oar_defect {
namespace {

bool every_kernel(const RealKernel&) { return true; }

oar_status_t synchronous_kernel(const oar_kernel_call_t* call) {
  oar_status_t status = real->stream_synchronize(call->stream);
  if (status != OAR_STATUS_OK) return status;
  status = call_real(call);
  if (status != OAR_STATUS_OK) return status;
  return real->stream_synchronize(call->stream);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, every_kernel, synchronous_kernel); }

}  // namespace oar_defect
