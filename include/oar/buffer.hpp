// oar::Buffer: a range of device memory, addressed as (allocation, offset).
// Buffers from Device::allocate come from the device's caching allocator and
// return to it (stream ordered) when destroyed; Device::allocate_uncached and
// DLPack imports own their memory directly.
#pragma once

#include <cstdint>

#include "dlpack/dlpack.h"
#include "oar/handles.h"
#include "oar/tracked.hpp"

namespace oar {

class Device;
class Stream;

class Buffer final : private detail::Tracked {
 public:
  Buffer() = default;
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  bool valid() const { return device_ != nullptr; }
  // Whether the buffer is empty because its runtime was destroyed (rather than
  // default-constructed or moved from).
  using detail::Tracked::released_by_runtime;
  // Throws FAILED_PRECONDITION when the buffer is empty.
  Device& device() const;
  // The allocation handle; never do arithmetic on it.
  oar_memory_t memory() const { return memory_; }
  // Where this buffer starts inside memory().
  uint64_t offset() const { return offset_; }
  uint64_t size() const { return size_; }
  // An oar_memory_kind_e bit.
  uint32_t kind() const { return kind_; }
  // The host address of the first byte, for HOST_PINNED and UNIFIED buffers;
  // throws INVALID_ARGUMENT for device memory.
  void* host_address() const;
  // Tells the caching allocator the buffer is also used on |stream|: its
  // memory is reused only after that stream's work up to now is done.
  // Throws FAILED_PRECONDITION when the buffer or the stream is empty.
  void record_stream(Stream& stream);

 private:
  friend class Device;
  friend class Tensor;
  enum class Owner { kCached, kDevice, kDLPack };
  // An empty buffer that will hold |size| bytes of |kind| owned by |owner|
  // (Device::allocate fills in the rest; listing these members here keeps the
  // compiler from zeroing the whole object with a slow `rep stos` first).
  Buffer(uint64_t size, uint32_t kind, Owner owner) noexcept
      : size_(size), kind_(kind), owner_(owner) {}
  void release() noexcept override;
  const char* what() const noexcept override { return "buffer"; }

  Device* device_ = nullptr;
  oar_memory_t memory_ = nullptr;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
  uint32_t kind_ = 0;
  Owner owner_ = Owner::kDevice;
  void* block_ = nullptr;                // the allocator's block (kCached)
  DLManagedTensor* imported_ = nullptr;  // the producer's tensor (kDLPack)
};

}  // namespace oar
