// Every kernel runs when it is dispatched, on the calling thread: the launch
// path runs the kernel to completion on a stream of its own instead of
// queueing it on call->stream, so it ignores the work queued there before it.
// Each result is right when nothing is pending on the stream.
#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel&) { return true; }

oar_status_t at_dispatch(const oar_kernel_call_t* call) {
  oar_stream_t own = nullptr;
  oar_status_t status = real->stream_create(call->device, nullptr, &own);
  if (status != OAR_STATUS_OK) return status;
  oar_kernel_call_t copy = *call;
  copy.stream = own;  // the defect
  status = call_real(call, copy);
  oar_status_t done = real->stream_synchronize(own);
  real->stream_destroy(own);
  return status != OAR_STATUS_OK ? status : done;
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, at_dispatch); }

}  // namespace oar_defect
