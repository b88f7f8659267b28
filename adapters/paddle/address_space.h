// The pointers Paddle sees for OAR device memory.
//
// Paddle does arithmetic on device pointers (a tensor's data is its
// allocation's pointer plus an offset); OAR addresses device memory as
// (allocation handle, byte offset), and on OpenCL or Vulkan the handle is an
// object, not an address. The adapter therefore hands Paddle addresses from a
// range of host address space it reserves and never maps: one reservation of
// kReservedBytes made with PROT_NONE, cut into kGranuleBytes granules. Each
// allocation gets a run of whole granules; a table with one entry per granule
// points back at the allocation, so finding (buffer, offset) for any address
// inside it is one subtraction, one shift and one load (O(1), no lock). The
// range is inaccessible, so a host read or write of device memory through
// such a pointer (a CPU kernel run on device memory by mistake) faults at
// once instead of reading garbage.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "oar/buffer.hpp"

namespace oar_paddle {

class AddressSpace {
 public:
  static constexpr uint64_t kGranuleShift = 21;  // 2 MiB
  static constexpr uint64_t kGranuleBytes = uint64_t(1) << kGranuleShift;
  static constexpr uint64_t kReservedBytes = uint64_t(1) << 40;  // 1 TiB of addresses

  struct Range {
    std::unique_ptr<oar::Buffer> buffer;
    uintptr_t base = 0;  // the address Paddle holds for offset 0 of |buffer|
    uint64_t size = 0;   // bytes Paddle asked for
    int device = 0;      // the adapter's device id
  };

  // Reserves the address range; throws std::runtime_error when mmap fails.
  AddressSpace();
  ~AddressSpace();
  AddressSpace(const AddressSpace&) = delete;
  AddressSpace& operator=(const AddressSpace&) = delete;

  // Gives |buffer| an address range; nullptr when the reservation is full.
  void* insert(std::unique_ptr<oar::Buffer> buffer, uint64_t size, int device);
  // Forgets the range starting at |address| and returns its buffer (nullptr
  // when |address| is not the start of a live range).
  std::unique_ptr<oar::Buffer> erase(void* address);

  // The range holding |address| (its last byte included), or nullptr.
  const Range* find(const void* address) const {
    uint64_t delta = uint64_t(reinterpret_cast<uintptr_t>(address)) - base_;
    if (delta >= kReservedBytes) return nullptr;
    return table_[delta >> kGranuleShift];
  }
  bool contains(const void* address) const {
    return uint64_t(reinterpret_cast<uintptr_t>(address)) - base_ < kReservedBytes;
  }

 private:
  uintptr_t base_ = 0;
  Range** table_ = nullptr;            // kReservedBytes >> kGranuleShift entries
  std::mutex mutex_;                   // guards free_ and writers of table_
  std::map<uint64_t, uint64_t> free_;  // first granule -> count of free granules
};

}  // namespace oar_paddle
