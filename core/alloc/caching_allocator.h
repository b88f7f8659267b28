// A per-device caching allocator for memory addressed as (allocation handle, byte offset).
//
// Device memory comes from an AllocatorBackend in segments (2 MiB for small requests,
// request-sized rounded up to 2 MiB for large ones) and is handed out as Blocks: a sub-range
// [offset, offset + size) of a segment. The allocator never does arithmetic on a device handle,
// so it works alike for real pointers and for opaque objects such as an OpenCL cl_mem.
//
// Reuse is stream-ordered: a block freed on stream S is reusable at once by allocations on S;
// another stream T takes it only after an event recorded on S reports that S's work is done, or
// reports S's error (a failed stream runs no more work), or S is destroyed.
// Tunable through a config string (OAR_ALLOC_CONF), see AllocatorConfig.
// OAR_ALLOC_TRACE=<file> records every allocate/free/record_stream/forget_stream/empty_cache
// as one text line (format in docs/performance.md, "Allocation traces"); "%p" in the name is
// replaced by the process id. bench/fragmentation_bench.cc replays such traces.
//
// Threading: every CachingAllocator member is thread-safe (one internal mutex), except the
// destructor, which must not race with any other call.
#pragma once

#include <boost/intrusive/set_hook.hpp>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "core/util/status.h"
#include "oar/memory_stats.hpp"

namespace oar::alloc {

// How the allocator reaches the device. Handles (memory, streams, events) are opaque.
class AllocatorBackend {
 public:
  virtual ~AllocatorBackend() = default;
  // Allocates |size| bytes of device memory. OAR_STATUS_RESOURCE_EXHAUSTED when out of memory.
  virtual Status allocate(size_t size, void** out_memory) = 0;
  // Releases |memory|. Work already submitted to a stream may still use it (the allocator frees
  // cached segments without waiting for every stream), so the backend defers the release until
  // such work completes or synchronizes first, as cudaFree, hipFree and clReleaseMemObject do.
  virtual void deallocate(void* memory) = 0;
  // Records a new event on |stream| capturing all work submitted to it so far.
  virtual Status record_event(void* stream, void** out_event) = 0;
  virtual Status query_event(void* event, bool* out_done) = 0;
  virtual Status synchronize_event(void* event) = 0;
  virtual void release_event(void* event) = 0;
};

// Tuning knobs, usually parsed from OAR_ALLOC_CONF.
struct AllocatorConfig {
  // false: every allocate goes straight to the backend and every free returns the memory.
  bool caching = true;
  // Large blocks bigger than this are never split and serve only requests bigger than this
  // (wasting less than 20 MiB). SIZE_MAX: no limit. Small-pool blocks are not affected.
  size_t max_split_size = SIZE_MAX;
  // Offsets and block sizes are multiples of max(512, alignment). A power of two.
  size_t alignment = 512;
  // Size of the segments that serve small requests (<= min(1 MiB, this)).
  size_t small_segment_size = size_t{2} << 20;

  // Parses "key:value,key:value" (spaces around tokens are ignored; "" gives the defaults).
  // Keys: caching (0|1), max_split_size_mb (MiB, >= 1), alignment (bytes, power of two,
  // <= 1 GiB), small_segment_kb (KiB, a multiple of max(512, alignment) bytes).
  // Errors: OAR_STATUS_INVALID_ARGUMENT naming the key (and the valid keys if it is unknown).
  static Result<AllocatorConfig> parse(std::string_view text);
};

// The statistics are the public oar::MemoryStats (Device::memory_stats).
using AllocatorStats = ::oar::MemoryStats;

namespace detail {
class AllocatorImpl;
struct Segment;
}  // namespace detail

// A sub-range of a device allocation. Owned by its CachingAllocator; valid until freed.
class Block {
 public:
  // The backend's handle of the allocation this block lies in.
  void* memory() const { return memory_; }
  // Byte offset of the block in memory(); a multiple of max(512, alignment).
  size_t offset() const { return offset_; }
  // Usable bytes: the request rounded up to its size class (possibly more for blocks bigger
  // than max_split_size, which are never split).
  size_t size() const { return size_; }
  size_t requested_size() const { return requested_size_; }
  // The stream the block was allocated on.
  void* stream() const { return stream_; }
  // What the caller passed to allocate() as |owner| (or set_owner() since).
  void* owner() const { return owner_; }

  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;

 private:
  friend class detail::AllocatorImpl;
  enum class State : uint8_t { kAllocated, kFree, kPending };

  Block() = default;
  ~Block() = default;

  boost::intrusive::set_member_hook<boost::intrusive::link_mode<boost::intrusive::normal_link>>
      free_hook_;
  void* memory_ = nullptr;
  size_t offset_ = 0;
  size_t size_ = 0;
  size_t requested_size_ = 0;
  void* stream_ = nullptr;
  void* owner_ = nullptr;
  uint64_t trace_id_ = 0;  // the block's number in the OAR_ALLOC_TRACE file
  detail::Segment* segment_ = nullptr;
  uint64_t segment_id_ = 0;
  Block* prev_ = nullptr;  // neighbours in the segment, by offset
  Block* next_ = nullptr;
  uintptr_t free_key_ = 0;           // while free: the stream it may be reused on, or "any"
  uintptr_t key_after_pending_ = 0;  // the free_key_ once its pending events are done
  uint32_t pending_events_ = 0;
  State state_ = State::kFree;
  bool small_ = false;
  bool orphaned_ = false;           // allocated on a stream since destroyed
  std::vector<void*> stream_uses_;  // streams added by record_stream
};

class CachingAllocator {
 public:
  // Borrows |backend|, which must outlive the allocator.
  explicit CachingAllocator(AllocatorBackend& backend, AllocatorConfig config = {});
  // Waits for pending events and returns every segment to the backend, including the segments
  // of blocks still allocated (leaked): those Block pointers become invalid.
  ~CachingAllocator();

  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // Returns a block of at least |size| bytes usable in stream order on |stream|. Size 0 gets a
  // minimum-size block, so that every success is a distinct block to free.
  // Errors: OAR_STATUS_RESOURCE_EXHAUSTED when the backend is out of memory even after the
  // cache was released (the message gives the size and the allocator's usage); any other
  // backend error as is.
  // |owner| is the caller's, kept with the block under the allocator's own lock (so a caller
  // that must find its live objects again, such as Device at shutdown, needs no second lock).
  Result<Block*> allocate(size_t size, void* stream, void* owner = nullptr);
  // Replaces the owner of an allocated block (the owning object moved).
  void set_owner(Block* block, void* owner);
  // The owners (non-null) of the blocks allocated now, in no particular order.
  std::vector<void*> owners() const;
  // Returns |block| to the cache (nullptr is a no-op). Work already submitted to the block's
  // stream may still use it: stream order makes reuse on that stream safe.
  void free(Block* block);
  // Marks |block| as used on |stream| too: at free, the block is reused by no one until an
  // event recorded on each such stream is done.
  void record_stream(Block* block, void* stream);
  // Tells the allocator that |stream| was destroyed after its work completed:
  // blocks kept for it (free, pending, or still allocated and freed later)
  // become reusable by any stream, events recorded on it are released as
  // done, and it drops out of record_stream lists, so no event is ever
  // recorded on a dead stream.
  void forget_stream(void* stream);
  // Waits for pending events, then releases every fully free segment to the backend.
  // Always OK: an event that reports its stream's error counts as done (the
  // failed stream's work has ended), and that error is the stream's to report.
  Status empty_cache();

  AllocatorStats stats() const;
  // Sets the peaks to the current values.
  void reset_peak_stats();
  // Blocks allocated and not yet freed; the destructor releases their memory anyway.
  size_t leaked_blocks() const;

 private:
  std::unique_ptr<detail::AllocatorImpl> impl_;
};

}  // namespace oar::alloc
