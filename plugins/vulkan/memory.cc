// Memory: each allocation is a VkBuffer over its own VkDeviceMemory, in the
// device-local type for OAR_MEMORY_KIND_DEVICE and in a host-visible coherent
// type (mapped for its life) for OAR_MEMORY_KIND_HOST_PINNED. Copies from or
// to pageable host memory go through host-visible staging buffers that the
// stream recycles; pinned host memory is copied from directly. Where device
// memory is itself host-visible and coherent (lavapipe, integrated GPUs), a
// large copy from or to pageable memory is one memcpy in stream order.
#include <cstring>
#include <functional>
#include <string>

#include "vulkan.h"

namespace oar::vulkan {

void check_range(const oar_memory_s* memory, uint64_t offset, uint64_t size, const char* what) {
  require_not_null(memory, what);
  uint64_t allocation_size = memory->buffer.size;
  // Written so that offset + size cannot overflow.
  if (offset <= allocation_size && size <= allocation_size - offset) return;
  throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE,
                        std::string(what) + ": range [offset " + std::to_string(offset) +
                            ", size " + std::to_string(size) + ") leaves the allocation of size " +
                            std::to_string(allocation_size));
}

namespace {

bool is_single_kind(uint32_t kind) {
  constexpr uint32_t kKinds =
      OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED | OAR_MEMORY_KIND_UNIFIED;
  return kind != 0 && (kind & (kind - 1)) == 0 && (kind & kKinds) == kind;
}

// From this size on, a copy between pageable memory and an allocation the
// host can address is one memcpy on the stream's worker (after the work
// before it) instead of a memcpy through staging plus a device copy: half the
// memory traffic. Smaller copies keep the staged path, which records into
// the current command buffer without a submit or a thread handoff.
constexpr uint64_t kDirectCopyBytes = 1u << 20;

bool copies_directly(const oar_memory_s* memory, uint64_t size) {
  return size >= kDirectCopyBytes && memory->buffer.mapped != nullptr;
}

// Queues |copy| as a host step of |stream|, after a barrier that makes the
// device's earlier writes visible to the host (and orders them before the
// host's writes).
void copy_on_host(oar_stream_t stream, std::function<void(oar_status_t)> copy) {
  std::lock_guard<std::mutex> lock(stream->mutex);
  stream->record_locked(0, [](Batch& batch, uint32_t) { batch.host_reads = true; });
  stream->add_host_step_locked(std::move(copy));
}

// |to_host|: the destination is host-visible (staging or pinned memory).
void copy_buffer(Batch& batch, VkBuffer src, uint64_t src_offset, VkBuffer dst, uint64_t dst_offset,
                 uint64_t size, bool to_host) {
  batch.host_reads |= to_host;
  VkBufferCopy region{src_offset, dst_offset, size};
  vk.CmdCopyBuffer(batch.commands, src, dst, 1, &region);
}

}  // namespace

void VulkanPlugin::memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                                   oar_memory_t* out_memory) {
  require_not_null(device, "device");
  require_not_null(out_memory, "out_memory");
  const oar_device_properties_t& p = device->physical->oar;
  oar::sdk::require(is_single_kind(kind), OAR_STATUS_INVALID_ARGUMENT,
                    "memory_allocate: kind " + std::to_string(kind) +
                        " is not one of DEVICE, HOST_PINNED, UNIFIED");
  oar::sdk::require(
      (kind & p.memory_kinds) == kind, OAR_STATUS_INVALID_ARGUMENT,
      "memory_allocate: kind " + std::to_string(kind) + " is not in the device's memory_kinds");
  oar::sdk::require(size <= p.max_allocation_size, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_allocate: " + std::to_string(size) +
                        " bytes exceed max_allocation_size " +
                        std::to_string(p.max_allocation_size) +
                        " (kernels bind whole buffers: maxStorageBufferRange)");
  auto memory = std::make_unique<oar_memory_s>();
  memory->device = device;
  memory->kind = kind;
  memory->buffer =
      device->create_buffer(size, kind == OAR_MEMORY_KIND_HOST_PINNED ? device->host_memory_type
                                                                      : device->device_memory_type);
  device->allocated_bytes += size;
  std::lock_guard<std::mutex> lock(device->mutex);
  device->allocations.insert(memory.get());
  if (kind == OAR_MEMORY_KIND_HOST_PINNED) {
    device->pinned.emplace(reinterpret_cast<uintptr_t>(memory->buffer.mapped), memory.get());
    device->pinned_buffers.insert(memory->buffer.buffer);
    ++device->pinned_count;
  }
  *out_memory = memory.release();
}

void VulkanPlugin::memory_free(oar_device_t device, oar_memory_t memory) {
  if (memory == nullptr) return;
  require_not_null(device, "device");
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    oar::sdk::require(device->allocations.erase(memory) == 1, OAR_STATUS_INVALID_ARGUMENT,
                      "memory_free: not an allocation of this vulkan device (or already freed)");
    if (memory->kind == OAR_MEMORY_KIND_HOST_PINNED) {
      device->pinned.erase(reinterpret_cast<uintptr_t>(memory->buffer.mapped));
      device->pinned_buffers.erase(memory->buffer.buffer);
      --device->pinned_count;
    }
  }
  device->allocated_bytes -= memory->buffer.size;
  device->destroy_buffer(memory->buffer);
  delete memory;
}

void VulkanPlugin::memory_host_address(oar_device_t device, oar_memory_t memory,
                                       void** out_address) {
  require_not_null(device, "device");
  device->require_allocation(memory, "memory");
  require_not_null(out_address, "out_address");
  oar::sdk::require(memory->kind == OAR_MEMORY_KIND_HOST_PINNED, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_host_address: the allocation is device memory, not host-visible");
  *out_address = memory->buffer.mapped;
}

void VulkanPlugin::memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                   const void* src, uint64_t size) {
  require_not_null(stream, "stream");
  stream->device->require_allocation(dst, "memory_copy_h2d destination");
  check_range(dst, dst_offset, size, "memory_copy_h2d destination");
  if (size == 0) return;
  require_not_null(src, "memory_copy_h2d source");
  VkBuffer to = dst->buffer.buffer;
  bool to_host = dst->kind == OAR_MEMORY_KIND_HOST_PINNED;
  if (oar_memory_s* pinned = stream->device->find_pinned(src, size)) {
    uint64_t src_offset =
        reinterpret_cast<uintptr_t>(src) - reinterpret_cast<uintptr_t>(pinned->buffer.mapped);
    VkBuffer from = pinned->buffer.buffer;
    stream->record(0, [=](Batch& batch, uint32_t) {
      copy_buffer(batch, from, src_offset, to, dst_offset, size, to_host);
    });
    return;
  }
  if (copies_directly(dst, size)) {
    char* to = static_cast<char*>(dst->buffer.mapped) + dst_offset;
    copy_on_host(stream, [to, src, size](oar_status_t) { std::memcpy(to, src, size); });
    return;
  }
  // Pageable memory: copied into staging now, so the caller's buffer is free
  // again when this returns (the ABI allows either).
  stream->record(0, [&](Batch& batch, uint32_t) {
    Buffer& staging = stream->staging(batch, size);
    std::memcpy(staging.mapped, src, size);
    copy_buffer(batch, staging.buffer, 0, to, dst_offset, size, to_host);
  });
}

void VulkanPlugin::memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src,
                                   uint64_t src_offset, uint64_t size) {
  require_not_null(stream, "stream");
  stream->device->require_allocation(src, "memory_copy_d2h source");
  check_range(src, src_offset, size, "memory_copy_d2h source");
  if (size == 0) return;
  require_not_null(dst, "memory_copy_d2h destination");
  VkBuffer from = src->buffer.buffer;
  if (oar_memory_s* pinned = stream->device->find_pinned(dst, size)) {
    uint64_t dst_offset =
        reinterpret_cast<uintptr_t>(dst) - reinterpret_cast<uintptr_t>(pinned->buffer.mapped);
    VkBuffer to = pinned->buffer.buffer;
    stream->record(0, [=](Batch& batch, uint32_t) {
      copy_buffer(batch, from, src_offset, to, dst_offset, size, true);
    });
    return;
  }
  if (copies_directly(src, size)) {
    const char* from = static_cast<const char*>(src->buffer.mapped) + src_offset;
    copy_on_host(stream, [dst, from, size](oar_status_t) { std::memcpy(dst, from, size); });
    return;
  }
  // Pageable memory: device -> staging on the queue, staging -> |dst| as a
  // host step once the copy is done.
  std::lock_guard<std::mutex> lock(stream->mutex);
  void* staged = nullptr;
  stream->record_locked(0, [&](Batch& batch, uint32_t) {
    Buffer& staging = stream->staging(batch, size);
    staged = staging.mapped;
    copy_buffer(batch, from, src_offset, staging.buffer, 0, size, true);
  });
  stream->add_host_step_locked(
      [dst, staged, size](oar_status_t) { std::memcpy(dst, staged, size); });
}

void VulkanPlugin::memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                   oar_memory_t src, uint64_t src_offset, uint64_t size) {
  require_not_null(stream, "stream");
  stream->device->require_allocation(dst, "memory_copy_d2d destination");
  stream->device->require_allocation(src, "memory_copy_d2d source");
  check_range(dst, dst_offset, size, "memory_copy_d2d destination");
  check_range(src, src_offset, size, "memory_copy_d2d source");
  if (size == 0) return;
  if (dst == src) {
    // The ABI allows only identical overlapping ranges, which need no copy.
    if (dst_offset == src_offset) return;
    oar::sdk::require(dst_offset + size <= src_offset || src_offset + size <= dst_offset,
                      OAR_STATUS_INVALID_ARGUMENT,
                      "memory_copy_d2d: source and destination ranges partly overlap");
  }
  VkBuffer from = src->buffer.buffer, to = dst->buffer.buffer;
  bool to_host = dst->kind == OAR_MEMORY_KIND_HOST_PINNED;
  stream->record(0, [=](Batch& batch, uint32_t) {
    copy_buffer(batch, from, src_offset, to, dst_offset, size, to_host);
  });
}

void VulkanPlugin::memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                               uint8_t value, uint64_t size) {
  require_not_null(stream, "stream");
  stream->device->require_allocation(dst, "memory_fill destination");
  check_range(dst, dst_offset, size, "memory_fill destination");
  if (size == 0) return;
  VkBuffer to = dst->buffer.buffer;
  // vkCmdFillBuffer writes whole aligned words; the bytes before and after
  // them go through the bytefill shader.
  uint64_t begin = (dst_offset + 3) / 4 * 4;
  uint64_t end = (dst_offset + size) / 4 * 4;
  if (begin >= end) {
    begin = end = dst_offset + size;  // no whole word: all bytes by shader
  }
  auto bytes = [&](uint64_t from, uint64_t count) {
    if (count == 0) return;
    int32_t params[3] = {int32_t(count), int32_t(from), value};
    dispatch(stream, "bytefill", 0, {{3, to}}, params, 3, count);
  };
  bytes(dst_offset, begin - dst_offset);
  if (end > begin) {
    uint32_t word = uint32_t(value) * 0x01010101u;
    bool to_host = dst->kind == OAR_MEMORY_KIND_HOST_PINNED;
    stream->record(0, [=](Batch& batch, uint32_t) {
      batch.host_reads |= to_host;
      vk.CmdFillBuffer(batch.commands, to, begin, end - begin, word);
    });
  }
  bytes(end, dst_offset + size - end);
}

}  // namespace oar::vulkan
