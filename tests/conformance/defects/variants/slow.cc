// Correct but slow: every kernel launch and every synchronization takes
// 0.65 s (a device behind a slow link, an emulator, a remote accelerator).
// oar-conform must certify it: its timeouts are per test and grow with the
// device's measured round trip.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

void wait_a_while() { std::this_thread::sleep_for(std::chrono::milliseconds(650)); }

bool every_kernel(const RealKernel&) { return true; }

oar_status_t slow_kernel(const oar_kernel_call_t* call) {
  wait_a_while();
  return call_real(call);
}

oar_status_t slow_stream_synchronize(oar_stream_t stream) {
  wait_a_while();
  return real->stream_synchronize(stream);
}

oar_status_t slow_event_synchronize(oar_event_t event) {
  wait_a_while();
  return real->event_synchronize(event);
}

oar_status_t slow_device_synchronize(oar_device_t device) {
  wait_a_while();
  return real->device_synchronize(device);
}

}  // namespace

void install(oar_plugin_api_t& table) {
  wrap_kernels(table, every_kernel, slow_kernel);
  table.stream_synchronize = slow_stream_synchronize;
  table.event_synchronize = slow_event_synchronize;
  table.device_synchronize = slow_device_synchronize;
}

}  // namespace oar_defect
