// Every kernel goes to one compute queue of the plugin (a stream of its own,
// shared by all streams) instead of call->stream, and nothing orders the two:
// the kernel starts before the work queued ahead of it on its stream, and the
// stream's later work (downloads, events, synchronize) does not wait for it.
// Right whenever the stream is idle at dispatch and the kernel is quick.
#include <mutex>

#include "../shim.h"

namespace oar_defect {
namespace {

std::once_flag g_once;
oar_stream_t g_compute = nullptr;

bool affected(const RealKernel&) { return true; }

oar_status_t queued_kernel(const oar_kernel_call_t* call) {
  std::call_once(g_once, [call] { real->stream_create(call->device, nullptr, &g_compute); });
  if (g_compute == nullptr) return call_real(call);
  oar_kernel_call_t copy = *call;
  copy.stream = g_compute;  // the defect: no order with call->stream either way
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, queued_kernel); }

}  // namespace oar_defect
