// An index error whose message says only that some kernel read an index out
// of range (as a GPU plugin that keeps one error flag per stream and no
// record of the operator, the index or the bound would): stream_synchronize
// still fails with OUT_OF_RANGE, but its message names none of them.
#include "../shim.h"

namespace oar_defect {
namespace {

const oar_host_services_t* g_host = nullptr;

oar_status_t initialize(const oar_host_services_t* host) {
  g_host = host;
  return real->initialize(host);
}

oar_status_t stream_synchronize(oar_stream_t stream) {
  oar_status_t status = real->stream_synchronize(stream);
  if (status == OAR_STATUS_OUT_OF_RANGE && g_host != nullptr) {
    // The defect: the detail the real plugin reported is replaced.
    g_host->report_error(g_host->context, status,
                         "a kernel on this stream read an index out of range; the stream has "
                         "failed");
  }
  return status;
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.initialize = initialize;
  table.stream_synchronize = stream_synchronize;
}

}  // namespace oar_defect
