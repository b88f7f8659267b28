// Correct but slow: every kernel takes 0.65 s to run on its stream, and every
// synchronization takes 0.65 s to answer (a device behind a slow link, an
// emulator, a remote accelerator). Launches still return at once: the time
// is spent in stream order, as a device spends it. oar-conform must certify
// it: its timeouts are per test and grow with the device's measured round
// trip.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

void wait_a_while() { std::this_thread::sleep_for(std::chrono::milliseconds(650)); }

bool every_kernel(const RealKernel&) { return true; }

void run_for_a_while(void*, oar_status_t) { wait_a_while(); }

oar_status_t slow_kernel(const oar_kernel_call_t* call) {
  const oar_status_t status = call_real(call);
  if (status != OAR_STATUS_OK) return status;
  // The stream's next work starts 0.65 s after this kernel's.
  return real->stream_add_host_callback(call->stream, run_for_a_while, nullptr);
}

oar_status_t slow_stream_synchronize(oar_stream_t stream) {
  const oar_status_t status = real->stream_synchronize(stream);
  wait_a_while();  // the answer takes as long to come back
  return status;
}

oar_status_t slow_event_synchronize(oar_event_t event) {
  const oar_status_t status = real->event_synchronize(event);
  wait_a_while();  // the answer takes as long to come back
  return status;
}

oar_status_t slow_device_synchronize(oar_device_t device) {
  const oar_status_t status = real->device_synchronize(device);
  wait_a_while();  // the answer takes as long to come back
  return status;
}

}  // namespace

void install(oar_plugin_api_t& table) {
  wrap_kernels(table, every_kernel, slow_kernel);
  table.stream_synchronize = slow_stream_synchronize;
  table.event_synchronize = slow_event_synchronize;
  table.device_synchronize = slow_device_synchronize;
}

}  // namespace oar_defect
