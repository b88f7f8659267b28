// Memory: an oar_memory_t is the host pointer itself, so DLPack consumers of
// cpu tensors see a real address; a side table keeps sizes for range checks.
#include <cstdlib>
#include <cstring>
#include <string>

#include "cpu.h"

namespace oar::cpu {
namespace {

constexpr uint64_t kAlignment = 64;  // properties.min_alignment

bool is_single_kind(uint32_t kind) {
  constexpr uint32_t kKinds =
      OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED | OAR_MEMORY_KIND_UNIFIED;
  return kind != 0 && (kind & (kind - 1)) == 0 && (kind & kKinds) == kind;
}

// Async copies capture pointers and sizes only: no staging buffer, no copy of
// the caller's data, so a copy costs one memcpy on the worker.
void submit_copy(oar_stream_t stream, void* dst, const void* src, uint64_t size) {
  if (size == 0) return;
  stream->queue->submit([dst, src, size] { std::memcpy(dst, src, size); },
                        {oar::sdk::TaskInfo::kCopy, size});
}

}  // namespace

void CpuPlugin::memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                                oar_memory_t* out_memory) {
  require_not_null(device, "device");
  require_not_null(out_memory, "out_memory");
  // Every kind is plain host memory on the cpu: "pinned" has nothing to pin
  // against, and "device" memory is host memory.
  oar::sdk::require(is_single_kind(kind), OAR_STATUS_INVALID_ARGUMENT,
                    "memory_allocate: kind " + std::to_string(kind) +
                        " is not one of DEVICE, HOST_PINNED, UNIFIED");
  oar::sdk::require(
      (kind & properties_.memory_kinds) == kind, OAR_STATUS_INVALID_ARGUMENT,
      "memory_allocate: kind " + std::to_string(kind) + " is not in the device's memory_kinds");
  oar::sdk::require(size <= properties_.max_allocation_size, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_allocate: " + std::to_string(size) +
                        " bytes exceed max_allocation_size " +
                        std::to_string(properties_.max_allocation_size));
  void* pointer = allocate_bytes(device, size);
  oar::sdk::require(
      pointer != nullptr, OAR_STATUS_RESOURCE_EXHAUSTED,
      "memory_allocate: the host could not provide " + std::to_string(size) + " bytes");
  allocations_.insert(pointer, {size, kind, device});
  *out_memory = static_cast<oar_memory_t>(pointer);
}

void CpuPlugin::memory_free(oar_device_t device, oar_memory_t memory) {
  if (memory == nullptr) return;
  AllocationTable::Allocation allocation = allocations_.erase(memory, device);
  free_bytes(device, memory, allocation.size);
}

void* CpuPlugin::allocate_bytes(oar_device_s* device, uint64_t size) {
  (void)device;
  // aligned_alloc wants a multiple of the alignment; a zero-size allocation
  // still gets its own block so that its pointer is unique.
  uint64_t rounded = size == 0 ? kAlignment : (size + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded);
}

void CpuPlugin::free_bytes(oar_device_s* device, void* pointer, uint64_t size) {
  (void)device;
  (void)size;
  std::free(pointer);
}

void CpuPlugin::memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address) {
  require_not_null(device, "device");
  require_not_null(memory, "memory");
  require_not_null(out_address, "out_address");
  *out_address = memory;
}

void CpuPlugin::memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                const void* src, uint64_t size) {
  require_not_null(stream, "stream");
  allocations_.check_range(dst, dst_offset, size, "memory_copy_h2d destination");
  if (size != 0) require_not_null(src, "memory_copy_h2d source");
  submit_copy(stream, address(dst, dst_offset), src, size);
}

void CpuPlugin::memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src,
                                uint64_t src_offset, uint64_t size) {
  require_not_null(stream, "stream");
  allocations_.check_range(src, src_offset, size, "memory_copy_d2h source");
  if (size != 0) require_not_null(dst, "memory_copy_d2h destination");
  submit_copy(stream, dst, address(src, src_offset), size);
}

void CpuPlugin::memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                oar_memory_t src, uint64_t src_offset, uint64_t size) {
  require_not_null(stream, "stream");
  allocations_.check_range(dst, dst_offset, size, "memory_copy_d2d destination");
  allocations_.check_range(src, src_offset, size, "memory_copy_d2d source");
  char* to = address(dst, dst_offset);
  const char* from = address(src, src_offset);
  // The ABI allows only identical overlapping ranges, which need no copy;
  // memcpy on partly overlapping ranges would silently corrupt data.
  if (to == from) return;
  oar::sdk::require(to + size <= from || from + size <= to, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_copy_d2d: source and destination ranges partly overlap");
  submit_copy(stream, to, from, size);
}

void CpuPlugin::memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                            uint8_t value, uint64_t size) {
  require_not_null(stream, "stream");
  allocations_.check_range(dst, dst_offset, size, "memory_fill destination");
  if (size == 0) return;
  char* to = address(dst, dst_offset);
  stream->queue->submit([to, value, size] { std::memset(to, value, size); },
                        {oar::sdk::TaskInfo::kCopy, size});
}

}  // namespace oar::cpu
