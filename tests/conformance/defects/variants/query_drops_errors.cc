// stream_query reports only whether the stream is idle; the stream's error is
// left to stream_synchronize.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t stream_query(oar_stream_t stream, bool* out_idle) {
  bool idle = false;
  oar_status_t status = real->stream_query(stream, &idle);
  if (status != OAR_STATUS_OK && stream != nullptr && out_idle != nullptr) {
    *out_idle = true;  // the defect: a failed stream is idle and healthy
    return OAR_STATUS_OK;
  }
  if (status == OAR_STATUS_OK) *out_idle = idle;
  return status;
}

}  // namespace

void install(oar_plugin_api_t& table) { table.stream_query = stream_query; }

}  // namespace oar_defect
