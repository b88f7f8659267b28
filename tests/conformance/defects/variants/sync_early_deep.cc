// stream_synchronize waits with a 2 ms timeout and drops the timeout: it
// returns OK while a deep queue is still running.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t stream_synchronize(oar_stream_t stream) {
  if (stream == nullptr) return real->stream_synchronize(stream);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(2);
  for (;;) {
    bool idle = false;
    oar_status_t status = real->stream_query(stream, &idle);
    if (status != OAR_STATUS_OK || idle) return status;
    if (std::chrono::steady_clock::now() >= deadline) return OAR_STATUS_OK;  // the defect
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace

void install(oar_plugin_api_t& table) { table.stream_synchronize = stream_synchronize; }

}  // namespace oar_defect
