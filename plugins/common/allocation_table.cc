#include "oar/sdk/allocation_table.hpp"

#include "oar/sdk/kernel.hpp"
#include "oar/sdk/plugin.hpp"

namespace oar::sdk {

void AllocationTable::insert(void* memory, Allocation allocation) {
  std::lock_guard<std::mutex> lock(mutex_);
  allocations_.emplace(memory, allocation);
}

AllocationTable::Allocation AllocationTable::erase(void* memory, oar_device_t device) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(memory);
  oar::sdk::require(
      it != allocations_.end(), OAR_STATUS_INVALID_ARGUMENT,
      "memory_free: not an allocation of the " + plugin_ + " plugin (or already freed)");
  oar::sdk::require(it->second.device == device, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_free: the allocation belongs to another device handle");
  Allocation allocation = it->second;
  allocations_.erase(it);
  return allocation;
}

bool AllocationTable::find(const void* memory, Allocation* out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = allocations_.find(const_cast<void*>(memory));
  if (it == allocations_.end()) return false;
  *out = it->second;
  return true;
}

std::unordered_map<void*, AllocationTable::Allocation> AllocationTable::take_all(
    oar_device_t device) {
  std::unordered_map<void*, Allocation> taken;
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = allocations_.begin(); it != allocations_.end();) {
    if (it->second.device != device) {
      ++it;
      continue;
    }
    taken.emplace(it->first, it->second);
    it = allocations_.erase(it);
  }
  return taken;
}

void AllocationTable::check_range(const void* memory, uint64_t offset, uint64_t size,
                                  const char* what) const {
  // Runs on every copy, fill and kernel tensor: messages are built only on
  // failure.
  if (memory == nullptr) {
    throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                          std::string(what) + ": memory handle is NULL");
  }
  uint64_t allocation_size = 0;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = allocations_.find(const_cast<void*>(memory));
    if (it == allocations_.end()) {
      if (unknown_ == Unknown::kTrust) return;
      throw oar::sdk::Error(
          OAR_STATUS_INVALID_ARGUMENT,
          std::string(what) + ": not an allocation of the " + plugin_ + " plugin");
    }
    allocation_size = it->second.size;
  }
  // Written so that offset + size cannot overflow.
  if (offset <= allocation_size && size <= allocation_size - offset) return;
  throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE,
                        std::string(what) + ": range [offset " + std::to_string(offset) +
                            ", size " + std::to_string(size) + ") leaves the allocation of size " +
                            std::to_string(allocation_size));
}

void AllocationTable::check_tensor(const DLTensor& t, const char* what) const {
  const ByteSpan span = byte_span(t, what);
  check_range(t.data, span.offset, span.size, what);
}

uint64_t AllocationTable::allocated_bytes(const std::function<bool(oar_device_t)>& counts) const {
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t total = 0;
  for (const auto& [memory, allocation] : allocations_) {
    if (counts(allocation.device)) total += allocation.size;
  }
  return total;
}

}  // namespace oar::sdk
