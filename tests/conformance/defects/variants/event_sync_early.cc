// event_synchronize waits with a 2 ms timeout and drops the timeout: it
// returns OK while the work before the record is still running.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t event_synchronize(oar_event_t event) {
  if (event == nullptr) return real->event_synchronize(event);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  for (;;) {
    bool done = false;
    oar_status_t status = real->event_query(event, &done);
    if (status != OAR_STATUS_OK || done) return status;
    if (std::chrono::steady_clock::now() >= deadline) return OAR_STATUS_OK;  // the defect
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

void install(oar_plugin_api_t& table) { table.event_synchronize = event_synchronize; }

}  // namespace oar_defect
