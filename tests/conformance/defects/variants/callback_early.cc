// Host callbacks are handed to a thread at submission: they run at once,
// concurrently with the work queued before them.
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                               void* user_data) {
  if (stream == nullptr || callback == nullptr) {
    return real->stream_add_host_callback(stream, callback, user_data);
  }
  std::thread([callback, user_data] {
    callback(user_data, OAR_STATUS_OK);
  }).detach();  // the defect
  return OAR_STATUS_OK;
}

}  // namespace

void install(oar_plugin_api_t& table) { table.stream_add_host_callback = add_host_callback; }

}  // namespace oar_defect
