// A host callback runs when its work is done and once more: the vendor's
// completion handler and its stream-synchronize path both fire it.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                               void* user_data) {
  oar_status_t status = real->stream_add_host_callback(stream, callback, user_data);
  if (status != OAR_STATUS_OK) return status;
  return real->stream_add_host_callback(stream, callback, user_data);  // the defect
}

}  // namespace

void install(oar_plugin_api_t& table) { table.stream_add_host_callback = add_host_callback; }

}  // namespace oar_defect
