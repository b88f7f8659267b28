// device_synchronize waits for every stream and reports OK: the vendor made it
// "wait until idle" and left error reporting to the streams.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t device_synchronize(oar_device_t device) {
  oar_status_t status = real->device_synchronize(device);
  return device != nullptr ? OAR_STATUS_OK : status;  // the defect
}

}  // namespace

void install(oar_plugin_api_t& table) { table.device_synchronize = device_synchronize; }

}  // namespace oar_defect
