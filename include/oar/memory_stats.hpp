// What a device's caching allocator holds and has done, in bytes and counts.
#pragma once

#include <cstdint>

namespace oar {

struct MemoryStats {
  uint64_t allocated_bytes = 0;       // sizes (rounded to size classes) of live blocks
  uint64_t reserved_bytes = 0;        // segments held from the plugin
  uint64_t peak_allocated_bytes = 0;  // since creation or the last reset of peaks
  uint64_t peak_reserved_bytes = 0;
  uint64_t allocation_count = 0;     // successful allocations
  uint64_t free_count = 0;           // frees of a block
  uint64_t segment_count = 0;        // plugin allocations held now
  uint64_t backend_allocations = 0;  // plugin allocations made, ever
  uint64_t cache_hits = 0;           // allocations served without the plugin
  uint64_t oom_count = 0;            // allocations that failed out of memory, after the retry
  uint64_t largest_free_block = 0;   // largest cached block free now (not waiting on events)
  uint64_t active_blocks = 0;        // blocks allocated now
};

}  // namespace oar
