// memory_copy_h2d copies at once on the calling thread, ignoring the work
// queued on the stream before it.
#include <cstring>

#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                      uint64_t size) {
  // A range whose end overflows: the real plugin refuses it (and explains).
  if (dst_offset + size < dst_offset) {
    return real->memory_copy_h2d(stream, dst, dst_offset, src, size);
  }
  // The real plugin checks the arguments and the range (the end of the range
  // as an empty copy, which queues nothing), so that only the ordering breaks.
  oar_status_t status = real->memory_copy_h2d(stream, dst, dst_offset + size, src, 0);
  if (status != OAR_STATUS_OK) return status;
  if (size == 0) return OAR_STATUS_OK;
  if (src == nullptr) return real->memory_copy_h2d(stream, dst, dst_offset, src, size);
  // cpu memory handles are host pointers. No wait for the stream: the defect.
  std::memcpy(reinterpret_cast<char*>(dst) + dst_offset, src, size);
  return OAR_STATUS_OK;
}

}  // namespace

void install(oar_plugin_api_t& table) { table.memory_copy_h2d = copy_h2d; }

}  // namespace oar_defect
