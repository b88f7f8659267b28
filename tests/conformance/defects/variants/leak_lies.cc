// memory_free takes the allocation off the plugin's books (so that
// device_memory_info counts it as free again) but never releases the memory.
#include <map>
#include <mutex>

#include "../shim.h"

namespace oar_defect {
namespace {

std::mutex g_mutex;
std::map<oar_memory_t, uint64_t> g_sizes;  // live allocations
uint64_t g_leaked = 0;

oar_status_t memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                             oar_memory_t* out_memory) {
  oar_status_t status = real->memory_allocate(device, size, kind, out_memory);
  if (status == OAR_STATUS_OK) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_sizes[*out_memory] = size;
  }
  return status;
}

oar_status_t memory_free(oar_device_t device, oar_memory_t memory) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_sizes.find(memory);
  if (device == nullptr || it == g_sizes.end()) return real->memory_free(device, memory);
  g_leaked += it->second;  // off the books; the memory is never released: the defect
  g_sizes.erase(it);
  return OAR_STATUS_OK;
}

oar_status_t device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total) {
  oar_status_t status = real->device_memory_info(device, out_free, out_total);
  if (status != OAR_STATUS_OK) return status;
  std::lock_guard<std::mutex> lock(g_mutex);
  // The books say the leaked memory is free.
  *out_free = *out_free + g_leaked < *out_total ? *out_free + g_leaked : *out_total;
  return OAR_STATUS_OK;
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.memory_allocate = memory_allocate;
  table.memory_free = memory_free;
  table.device_memory_info = device_memory_info;
}

}  // namespace oar_defect
