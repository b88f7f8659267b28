// Device-to-device copies above 16 MiB are split into 4 MiB chunks, and every
// chunk after the first reads from the source allocation's start plus the
// chunk's position, forgetting the source offset.
#include <algorithm>

#include "../shim.h"

namespace oar_defect {
namespace {

constexpr uint64_t kChunk = uint64_t(4) << 20;

oar_status_t copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                      uint64_t src_offset, uint64_t size) {
  if (size <= 4 * kChunk || src_offset + size < src_offset || dst_offset + size < dst_offset) {
    return real->memory_copy_d2d(stream, dst, dst_offset, src, src_offset, size);
  }
  // The whole range is checked first, as the real plugin does.
  oar_status_t status =
      real->memory_copy_d2d(stream, dst, dst_offset + size, src, src_offset + size, 0);
  if (status != OAR_STATUS_OK) return status;
  for (uint64_t done = 0; done < size; done += kChunk) {
    const uint64_t n = std::min(kChunk, size - done);
    const uint64_t from = done == 0 ? src_offset : done;  // the defect
    status = real->memory_copy_d2d(stream, dst, dst_offset + done, src, from, n);
    if (status != OAR_STATUS_OK) return status;
  }
  return OAR_STATUS_OK;
}

}  // namespace

void install(oar_plugin_api_t& table) { table.memory_copy_d2d = copy_d2d; }

}  // namespace oar_defect
