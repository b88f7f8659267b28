// Events are plain markers that know nothing of the stream's failure: an event
// recorded after failed work reports complete and OK.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t event_query(oar_event_t event, bool* out_done) {
  bool done = false;
  oar_status_t status = real->event_query(event, &done);
  if (status != OAR_STATUS_OK && event != nullptr && out_done != nullptr) {
    *out_done = true;  // the defect: the error is dropped
    return OAR_STATUS_OK;
  }
  if (status == OAR_STATUS_OK) *out_done = done;
  return status;
}

oar_status_t event_synchronize(oar_event_t event) {
  oar_status_t status = real->event_synchronize(event);
  return event != nullptr ? OAR_STATUS_OK : status;  // the defect
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.event_query = event_query;
  table.event_synchronize = event_synchronize;
}

}  // namespace oar_defect
