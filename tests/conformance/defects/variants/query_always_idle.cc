// stream_query reports the stream's error, and "idle" whatever is pending: the
// vendor took it for an error check.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t stream_query(oar_stream_t stream, bool* out_idle) {
  bool idle = false;
  oar_status_t status = real->stream_query(stream, &idle);
  if (status == OAR_STATUS_OK) *out_idle = true;  // the defect
  return status;
}

}  // namespace

void install(oar_plugin_api_t& table) { table.stream_query = stream_query; }

}  // namespace oar_defect
