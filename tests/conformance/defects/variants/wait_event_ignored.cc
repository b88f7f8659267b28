// stream_wait_event checks its arguments and the precondition, and orders
// nothing: the vendor assumed the device runs streams in submission order.
#include <mutex>
#include <set>

#include "../shim.h"

namespace oar_defect {
namespace {

std::mutex g_mutex;
std::set<oar_event_t> g_recorded;

oar_status_t event_record(oar_event_t event, oar_stream_t stream) {
  oar_status_t status = real->event_record(event, stream);
  if (status == OAR_STATUS_OK) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_recorded.insert(event);
  }
  return status;
}

oar_status_t event_destroy(oar_event_t event) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_recorded.erase(event);
  }
  return real->event_destroy(event);
}

oar_status_t stream_wait_event(oar_stream_t stream, oar_event_t event) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (stream != nullptr && g_recorded.count(event) != 0) return OAR_STATUS_OK;  // the defect
  }
  return real->stream_wait_event(stream, event);  // the errors
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.event_record = event_record;
  table.event_destroy = event_destroy;
  table.stream_wait_event = stream_wait_event;
}

}  // namespace oar_defect
