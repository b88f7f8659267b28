#include "address_space.h"

#include <sys/mman.h>

#include <cstdlib>
#include <stdexcept>
#include <utility>

namespace oar_paddle {

namespace {
constexpr uint64_t kGranules = AddressSpace::kReservedBytes >> AddressSpace::kGranuleShift;
}

AddressSpace::AddressSpace() {
  void* p =
      mmap(nullptr, kReservedBytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) throw std::runtime_error("cannot reserve the device address range");
  base_ = reinterpret_cast<uintptr_t>(p);
  // calloc'd pages are touched only where ranges live.
  table_ = static_cast<Range**>(std::calloc(kGranules, sizeof(Range*)));
  if (table_ == nullptr) {
    munmap(p, kReservedBytes);
    throw std::runtime_error("cannot allocate the device address table");
  }
  free_.emplace(0, kGranules);
}

AddressSpace::~AddressSpace() {
  // Ranges still live belong to a Paddle that outlived the adapter: keep the
  // reservation so their addresses stay unique, release only what is ours.
  for (uint64_t g = 0; g < kGranules; ++g) {
    Range* range = table_[g];
    if (range == nullptr) continue;
    uint64_t last = (range->base - base_ + (range->size ? range->size - 1 : 0)) >> kGranuleShift;
    for (uint64_t i = g; i <= last; ++i) table_[i] = nullptr;
    delete range;
  }
  std::free(table_);
}

void* AddressSpace::insert(std::unique_ptr<oar::Buffer> buffer, uint64_t size, int device) {
  uint64_t granules = size == 0 ? 1 : (size + kGranuleBytes - 1) >> kGranuleShift;
  std::lock_guard<std::mutex> lock(mutex_);
  // First fit over free runs kept in address order; allocations from Paddle's
  // own caching allocator are few and large, so the walk is short.
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < granules) continue;
    uint64_t first = it->first;
    uint64_t left = it->second - granules;
    free_.erase(it);
    if (left != 0) free_.emplace(first + granules, left);
    auto* range = new Range{std::move(buffer), base_ + (first << kGranuleShift), size, device};
    for (uint64_t i = 0; i < granules; ++i) table_[first + i] = range;
    return reinterpret_cast<void*>(range->base);
  }
  return nullptr;
}

std::unique_ptr<oar::Buffer> AddressSpace::erase(void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  const Range* found = find(address);
  if (found == nullptr || found->base != reinterpret_cast<uintptr_t>(address)) return nullptr;
  Range* range = const_cast<Range*>(found);
  uint64_t first = (range->base - base_) >> kGranuleShift;
  uint64_t granules = range->size == 0 ? 1 : (range->size + kGranuleBytes - 1) >> kGranuleShift;
  for (uint64_t i = 0; i < granules; ++i) table_[first + i] = nullptr;
  // Merge with the free runs on either side.
  auto next = free_.lower_bound(first);
  if (next != free_.end() && next->first == first + granules) {
    granules += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == first) {
      prev->second += granules;
      granules = 0;
    }
  }
  if (granules != 0) free_.emplace(first, granules);
  std::unique_ptr<oar::Buffer> buffer = std::move(range->buffer);
  delete range;
  return buffer;
}

}  // namespace oar_paddle
