// device_close never returns: it waits for a driver thread that was never
// started. Every test passes, then the test process hangs while the runtime
// shuts down; oar-conform must time that out as <group>/shutdown.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t hanging_close(oar_device_t) {
  while (true) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

void install(oar_plugin_api_t& table) { table.device_close = hanging_close; }

}  // namespace oar_defect
