// stream_add_host_callback accepts the callback and never calls it.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                               void* user_data) {
  if (stream == nullptr || callback == nullptr) {
    return real->stream_add_host_callback(stream, callback, user_data);
  }
  return OAR_STATUS_OK;  // the defect
}

}  // namespace

void install(oar_plugin_api_t& table) { table.stream_add_host_callback = add_host_callback; }

}  // namespace oar_defect
