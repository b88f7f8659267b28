// memory_free frees nothing.
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t memory_free(oar_device_t, oar_memory_t) {
  return OAR_STATUS_OK;  // the defect
}

}  // namespace

void install(oar_plugin_api_t& table) { table.memory_free = memory_free; }

}  // namespace oar_defect
