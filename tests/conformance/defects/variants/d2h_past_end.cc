// memory_copy_d2h copies whole 4-byte words: a copy whose size is not a
// multiple of 4 writes up to 3 bytes past the end of the host destination
// (when the source allocation has them).
#include "../shim.h"

namespace oar_defect {
namespace {

oar_status_t copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                      uint64_t size) {
  const uint64_t words = (size + 3) / 4 * 4;
  if (size == 0 || src_offset + size < src_offset || words == size) {
    return real->memory_copy_d2h(stream, dst, src, src_offset, size);
  }
  // The defect: whole words, as far as the source allocation reaches.
  oar_status_t status = real->memory_copy_d2h(stream, dst, src, src_offset, words);
  if (status != OAR_STATUS_OUT_OF_RANGE) return status;
  return real->memory_copy_d2h(stream, dst, src, src_offset, size);
}

}  // namespace

void install(oar_plugin_api_t& table) { table.memory_copy_d2h = copy_d2h; }

}  // namespace oar_defect
