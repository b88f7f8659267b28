// Allocations of 16 MiB and more come from a second allocator that puts a
// 16-byte header in front of the block: their address is 16 bytes past the
// promised min_alignment.
#include <map>
#include <mutex>

#include "../shim.h"

namespace oar_defect {
namespace {

constexpr uint64_t kLarge = uint64_t(16) << 20;
constexpr uint64_t kHeader = 16;

std::mutex g_mutex;
std::map<oar_memory_t, oar_memory_t> g_blocks;  // handed out -> real allocation

oar_status_t memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                             oar_memory_t* out_memory) {
  if (size < kLarge || size > UINT64_MAX - kHeader) {
    return real->memory_allocate(device, size, kind, out_memory);
  }
  oar_memory_t block = nullptr;
  oar_status_t status = real->memory_allocate(device, size + kHeader, kind, &block);
  if (status != OAR_STATUS_OK) return status;
  // cpu memory handles are host pointers; the defect:
  auto handed = reinterpret_cast<oar_memory_t>(reinterpret_cast<char*>(block) + kHeader);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_blocks[handed] = block;
  *out_memory = handed;
  return OAR_STATUS_OK;
}

oar_status_t memory_free(oar_device_t device, oar_memory_t memory) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_blocks.find(memory);
    if (it != g_blocks.end()) {
      memory = it->second;
      g_blocks.erase(it);
    }
  }
  return real->memory_free(device, memory);
}

}  // namespace

void install(oar_plugin_api_t& table) {
  table.memory_allocate = memory_allocate;
  table.memory_free = memory_free;
}

}  // namespace oar_defect
