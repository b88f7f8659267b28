#include "core/alloc/caching_allocator.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/intrusive/list.hpp>
#include <boost/intrusive/set.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>

namespace oar::alloc {
namespace {

namespace bi = boost::intrusive;

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kMinBlockSize = 512;
constexpr size_t kSmallRequest = kMiB;  // requests up to this use the small pool
constexpr size_t kLargeSegmentGranularity = 2 * kMiB;
constexpr size_t kOversizeWaste = 20 * kMiB;  // an unsplittable block may waste this much
constexpr size_t kMaxAlignment = size_t{1} << 30;
constexpr size_t kMaxRequest = std::numeric_limits<size_t>::max() / 4;

// Free blocks that any stream may take without an event carry this key.
const char kAnyStreamTag = 0;
const uintptr_t kAnyStream = reinterpret_cast<uintptr_t>(&kAnyStreamTag);

uintptr_t key_of_stream(void* stream) { return reinterpret_cast<uintptr_t>(stream); }

size_t round_up(size_t value, size_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

std::string format_bytes(size_t bytes) {
  char buffer[64];
  if (bytes >= kMiB) {
    std::snprintf(buffer, sizeof(buffer), "%zu bytes (%.2f MiB)", bytes,
                  static_cast<double>(bytes) / static_cast<double>(kMiB));
  } else {
    std::snprintf(buffer, sizeof(buffer), "%zu bytes", bytes);
  }
  return buffer;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

constexpr const char* kValidKeys = "caching, max_split_size_mb, alignment, small_segment_kb";

bool parse_unsigned(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = value;
  return true;
}

Status config_error(std::string_view key, std::string_view value, const char* expected) {
  return Status(OAR_STATUS_INVALID_ARGUMENT, "OAR_ALLOC_CONF: bad value '" + std::string(value) +
                                                 "' for key '" + std::string(key) + "': expected " +
                                                 expected);
}

}  // namespace

Result<AllocatorConfig> AllocatorConfig::parse(std::string_view text) {
  AllocatorConfig config;
  bool small_segment_set = false;
  std::vector<std::string_view> seen;
  text = trim(text);
  if (text.empty()) return config;
  while (true) {
    size_t comma = text.find(',');
    std::string_view item = trim(text.substr(0, comma));
    size_t colon = item.find(':');
    std::string_view key = trim(item.substr(0, colon));
    if (colon == std::string_view::npos) {
      return Status(OAR_STATUS_INVALID_ARGUMENT, "OAR_ALLOC_CONF: expected key:value, got '" +
                                                     std::string(item) +
                                                     "'; valid keys: " + kValidKeys);
    }
    std::string_view value = trim(item.substr(colon + 1));
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return Status(OAR_STATUS_INVALID_ARGUMENT,
                    "OAR_ALLOC_CONF: key '" + std::string(key) + "' given twice");
    }
    seen.push_back(key);
    uint64_t number = 0;
    bool is_number = parse_unsigned(value, &number);
    if (key == "caching") {
      if (!is_number || number > 1) return config_error(key, value, "0 or 1");
      config.caching = number == 1;
    } else if (key == "max_split_size_mb") {
      if (!is_number || number == 0 || number > (uint64_t{1} << 40)) {
        return config_error(key, value, "a size in MiB, at least 1");
      }
      config.max_split_size = static_cast<size_t>(number) * kMiB;
    } else if (key == "alignment") {
      if (!is_number || number == 0 || (number & (number - 1)) != 0 || number > kMaxAlignment) {
        return config_error(key, value, "a power of two in bytes, at most 1 GiB");
      }
      config.alignment = static_cast<size_t>(number);
    } else if (key == "small_segment_kb") {
      if (!is_number || number == 0 || number > (uint64_t{1} << 30)) {
        return config_error(key, value, "a size in KiB, at least 1");
      }
      config.small_segment_size = static_cast<size_t>(number) * 1024;
      small_segment_set = true;
    } else {
      return Status(
          OAR_STATUS_INVALID_ARGUMENT,
          "OAR_ALLOC_CONF: unknown key '" + std::string(key) + "'; valid keys: " + kValidKeys);
    }
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  size_t granularity = std::max(kMinBlockSize, config.alignment);
  if (config.small_segment_size % granularity != 0) {
    return Status(
        OAR_STATUS_INVALID_ARGUMENT,
        std::string("OAR_ALLOC_CONF: ") + (small_segment_set ? "small_segment_kb" : "alignment") +
            " makes the small segment size (" + std::to_string(config.small_segment_size) +
            " bytes) not a multiple of max(512, alignment) = " + std::to_string(granularity));
  }
  return config;
}

namespace detail {

// The allocator's lock. Uncontended, locking is one atomic exchange and unlocking a plain
// release store (std::mutex pays a second atomic operation and a call into libc on each side,
// about 10 ns per allocate + free here). Sections are short except where the allocator waits
// for the device (out of memory, empty_cache) or the backend allocates, so a waiter spins
// briefly, then yields, then sleeps in steps of at most 50 us.
class AllocatorLock {
 public:
  void lock() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    lock_contended();
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  void lock_contended() {
    for (unsigned attempt = 0;; ++attempt) {
      if (!locked_.load(std::memory_order_relaxed) &&
          !locked_.exchange(true, std::memory_order_acquire)) {
        return;
      }
      if (attempt < 64) {
        pause();
      } else if (attempt < 128) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(attempt < 256 ? 5 : 50));
      }
    }
  }
  static void pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  std::atomic<bool> locked_{false};
};

struct Segment {
  bi::list_member_hook<bi::link_mode<bi::normal_link>> hook;
  void* memory = nullptr;
  size_t size = 0;
  uint64_t id = 0;
  Block* first = nullptr;
};

class AllocatorImpl {
 public:
  AllocatorImpl(AllocatorBackend& backend, const AllocatorConfig& config)
      : backend_(backend),
        config_(config),
        granularity_(std::max(kMinBlockSize, config.alignment)),
        small_limit_(std::min(kSmallRequest, config.small_segment_size)) {
    open_trace();
  }

  ~AllocatorImpl() {
    if (trace_ != nullptr) std::fclose(trace_);
    for (PendingEvent& pending : pending_) {
      (void)backend_.synchronize_event(pending.event);
      backend_.release_event(pending.event);
    }
    pending_.clear();
    if (stats_.active_blocks > 0) {
      std::fprintf(stderr,
                   "oar: caching allocator destroyed with %" PRIu64
                   " blocks (%zu bytes) still allocated; their memory is released\n",
                   stats_.active_blocks, stats_.allocated_bytes);
    }
    small_free_.clear();
    large_free_.clear();
    while (!segments_.empty()) {
      Segment* segment = &segments_.front();
      segments_.pop_front();
      for (Block* block = segment->first; block != nullptr;) {
        Block* next = block->next_;
        delete block;
        block = next;
      }
      backend_.deallocate(segment->memory);
      delete segment;
    }
    while (spare_ != nullptr) {
      Block* next = spare_->next_;
      delete spare_;
      spare_ = next;
    }
  }

  Result<Block*> allocate(size_t size, void* stream, void* owner) {
    std::lock_guard<AllocatorLock> lock(mu_);
    Result<Block*> result = allocate_locked(size, stream);
    if (result.ok()) {
      Block* block = result.value();
      block->owner_ = owner;
      if (trace_ != nullptr) {
        block->trace_id_ = ++next_trace_id_;
        std::fprintf(trace_, "a %" PRIu64 " %zu %zu\n", block->trace_id_, size,
                     trace_stream(stream));
      }
    }
    return result;
  }

  void set_owner(Block* block, void* owner) {
    std::lock_guard<AllocatorLock> lock(mu_);
    block->owner_ = owner;
  }

  std::vector<void*> owners() const {
    std::lock_guard<AllocatorLock> lock(mu_);
    std::vector<void*> result;
    for (const Segment& segment : segments_) {
      for (const Block* block = segment.first; block != nullptr; block = block->next_) {
        if (block->state_ == Block::State::kAllocated && block->owner_ != nullptr) {
          result.push_back(block->owner_);
        }
      }
    }
    return result;
  }

  Result<Block*> allocate_locked(size_t size, void* stream) {
    if (size > kMaxRequest) {
      ++stats_.oom_count;
      return out_of_memory(size, Status());
    }
    size_t rounded = round_up(size == 0 ? 1 : size, granularity_);
    if (!config_.caching) return allocate_uncached(size, rounded, stream);
    if (!pending_.empty()) process_events();

    bool small = rounded <= small_limit_;
    FreeSet& pool = small ? small_free_ : large_free_;
    uintptr_t key = key_of_stream(stream);
    Block* block = find_free(pool, small, key, rounded);
    if (block == nullptr && move_other_streams_to_pending(pool, small, key, rounded)) {
      process_events();
      block = find_free(pool, small, key, rounded);
    }
    bool from_cache = block != nullptr;
    if (block == nullptr) {
      Status status = new_segment(small, rounded, &block);
      if (status.code() == OAR_STATUS_RESOURCE_EXHAUSTED) {
        // Out of memory: wait for blocks on their way back, then give back the cache.
        if (!pending_.empty()) {
          synchronize_pending();
          block = find_free(pool, small, key, rounded);
          from_cache = block != nullptr;
        }
        if (block == nullptr) {
          release_free_segments();
          status = new_segment(small, rounded, &block);
        }
      }
      if (block == nullptr) {
        if (status.code() != OAR_STATUS_RESOURCE_EXHAUSTED) return status;
        ++stats_.oom_count;
        return out_of_memory(size, status);
      }
    }
    if (block->state_ == Block::State::kFree) pool.erase(pool.iterator_to(*block));
    if (should_split(block, small, rounded)) split(block, pool, rounded);
    block->state_ = Block::State::kAllocated;
    block->stream_ = stream;
    block->requested_size_ = size;
    if (from_cache) ++stats_.cache_hits;
    count_allocation(block->size_);
    return block;
  }

  void free(Block* block) {
    if (block == nullptr) return;
    std::lock_guard<AllocatorLock> lock(mu_);
    block->owner_ = nullptr;
    if (trace_ != nullptr) std::fprintf(trace_, "f %" PRIu64 "\n", block->trace_id_);
    ++stats_.free_count;
    --stats_.active_blocks;
    stats_.allocated_bytes -= block->size_;
    if (!config_.caching) {
      release_segment(block->segment_);
      return;
    }
    // A block whose stream is gone may go to any stream.
    const uintptr_t own_key = block->orphaned_ ? kAnyStream : key_of_stream(block->stream_);
    block->orphaned_ = false;
    if (block->stream_uses_.empty()) {
      make_free(block, own_key);
      return;
    }
    block->state_ = Block::State::kPending;
    block->key_after_pending_ = own_key;
    block->pending_events_ = 0;
    for (void* stream : block->stream_uses_) {
      void* event = nullptr;
      // A stream that cannot record an event has failed: its work will not run.
      if (!backend_.record_event(stream, &event).ok()) continue;
      pending_.push_back(PendingEvent{event, stream, {block}});
      ++block->pending_events_;
    }
    block->stream_uses_.clear();
    if (block->pending_events_ == 0) make_free(block, block->key_after_pending_);
  }

  void record_stream(Block* block, void* stream) {
    if (block == nullptr) return;
    std::lock_guard<AllocatorLock> lock(mu_);
    if (trace_ != nullptr) {
      std::fprintf(trace_, "r %" PRIu64 " %zu\n", block->trace_id_, trace_stream(stream));
    }
    if (stream == block->stream_) return;
    auto& uses = block->stream_uses_;
    if (std::find(uses.begin(), uses.end(), stream) == uses.end()) uses.push_back(stream);
  }

  // |stream| is gone and its work done (stream_destroy drains it): what was
  // kept for it becomes reusable by any stream, and no event is ever recorded
  // on it again.
  void forget_stream(void* stream) {
    std::lock_guard<AllocatorLock> lock(mu_);
    if (trace_ != nullptr) std::fprintf(trace_, "s %zu\n", trace_stream(stream));
    const uintptr_t key = key_of_stream(stream);
    // Events recorded on it are done (or failed with it): its work has ended.
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (pending_[i].stream == stream) {
        complete(pending_[i]);
        continue;
      }
      if (kept != i) pending_[kept] = std::move(pending_[i]);
      ++kept;
    }
    pending_.resize(kept);
    for (Segment& segment : segments_) {
      for (Block* block = segment.first; block != nullptr; block = block->next_) {
        auto& uses = block->stream_uses_;
        uses.erase(std::remove(uses.begin(), uses.end(), stream), uses.end());
        if (block->key_after_pending_ == key) block->key_after_pending_ = kAnyStream;
        if (block->state_ == Block::State::kAllocated && block->stream_ == stream) {
          block->orphaned_ = true;
        }
        if (block->state_ == Block::State::kFree && block->free_key_ == key) {
          // Re-keyed in place, without merging, so that the walk stays valid.
          FreeSet& pool = block->small_ ? small_free_ : large_free_;
          pool.erase(pool.iterator_to(*block));
          block->free_key_ = kAnyStream;
          pool.insert(*block);
        }
      }
    }
  }

  Status empty_cache() {
    std::lock_guard<AllocatorLock> lock(mu_);
    if (trace_ != nullptr) std::fputs("e\n", trace_);
    synchronize_pending();
    release_free_segments();
    return Status();
  }

  AllocatorStats stats() const {
    std::lock_guard<AllocatorLock> lock(mu_);
    AllocatorStats stats = stats_;
    for (const FreeSet* pool : {&small_free_, &large_free_}) {
      for (const Block& block : *pool) {
        stats.largest_free_block = std::max(stats.largest_free_block, block.size_);
      }
    }
    return stats;
  }

  void reset_peak_stats() {
    std::lock_guard<AllocatorLock> lock(mu_);
    stats_.peak_allocated_bytes = stats_.allocated_bytes;
    stats_.peak_reserved_bytes = stats_.reserved_bytes;
  }

  size_t leaked_blocks() const {
    std::lock_guard<AllocatorLock> lock(mu_);
    return static_cast<size_t>(stats_.active_blocks);
  }

 private:
  // Free blocks ordered by (stream key, size, segment, offset): best fit per stream is one
  // lower_bound.
  struct FreeKey {
    uintptr_t stream;
    size_t size;
    uint64_t segment;
    size_t offset;
  };
  static FreeKey key_of(const Block& block) {
    return FreeKey{block.free_key_, block.size_, block.segment_id_, block.offset_};
  }
  static bool less(const FreeKey& a, const FreeKey& b) {
    return std::tie(a.stream, a.size, a.segment, a.offset) <
           std::tie(b.stream, b.size, b.segment, b.offset);
  }
  struct BlockLess {
    bool operator()(const Block& a, const Block& b) const { return less(key_of(a), key_of(b)); }
  };
  struct KeyLess {
    bool operator()(const FreeKey& a, const Block& b) const { return less(a, key_of(b)); }
    bool operator()(const Block& a, const FreeKey& b) const { return less(key_of(a), b); }
  };
  using FreeHook = bi::set_member_hook<bi::link_mode<bi::normal_link>>;
  using FreeSet = bi::set<Block, bi::member_hook<Block, FreeHook, &Block::free_hook_>,
                          bi::compare<BlockLess>, bi::constant_time_size<false>>;
  using SegmentHook = bi::list_member_hook<bi::link_mode<bi::normal_link>>;
  using SegmentList = bi::list<Segment, bi::member_hook<Segment, SegmentHook, &Segment::hook>,
                               bi::constant_time_size<false>>;

  // An event, the stream it was recorded on, and the blocks that become free
  // when it is done.
  struct PendingEvent {
    void* event;
    void* stream;
    std::vector<Block*> blocks;
  };

  Block* new_block() {
    if (spare_ == nullptr) return new Block();
    Block* block = spare_;
    spare_ = block->next_;
    block->next_ = nullptr;
    return block;
  }

  void recycle(Block* block) {
    block->stream_uses_.clear();
    block->prev_ = nullptr;
    block->next_ = spare_;
    spare_ = block;
  }

  // Best fit on |key|'s own free blocks, then on blocks any stream may take.
  Block* find_free(FreeSet& pool, bool small, uintptr_t key, size_t rounded) {
    Block* block = find_free_on(pool, small, key, rounded);
    if (block == nullptr) block = find_free_on(pool, small, kAnyStream, rounded);
    return block;
  }

  Block* find_free_on(FreeSet& pool, bool small, uintptr_t key, size_t rounded) {
    auto it = pool.lower_bound(FreeKey{key, rounded, 0, 0}, KeyLess());
    if (it == pool.end() || it->free_key_ != key) return nullptr;
    if (!fits(*it, small, rounded)) return nullptr;  // larger blocks fit no better
    return &*it;
  }

  // Whether a free block of at least |rounded| bytes may serve a request of |rounded|.
  bool fits(const Block& block, bool small, size_t rounded) const {
    if (small || block.size_ <= config_.max_split_size) return true;
    return rounded > config_.max_split_size && block.size_ - rounded < kOversizeWaste;
  }

  bool should_split(const Block* block, bool small, size_t rounded) const {
    size_t remainder = block->size_ - rounded;
    if (small) return remainder >= granularity_;
    return block->size_ <= config_.max_split_size && remainder > kSmallRequest;
  }

  void split(Block* block, FreeSet& pool, size_t rounded) {
    Block* rest = new_block();
    rest->memory_ = block->memory_;
    rest->segment_ = block->segment_;
    rest->segment_id_ = block->segment_id_;
    rest->small_ = block->small_;
    rest->offset_ = block->offset_ + rounded;
    rest->size_ = block->size_ - rounded;
    rest->prev_ = block;
    rest->next_ = block->next_;
    if (rest->next_ != nullptr) rest->next_->prev_ = rest;
    block->next_ = rest;
    block->size_ = rounded;
    rest->state_ = Block::State::kFree;
    rest->free_key_ = block->state_ == Block::State::kFree ? block->free_key_ : kAnyStream;
    pool.insert(*rest);
  }

  static bool mergeable(const Block* neighbour, uintptr_t key) {
    return neighbour != nullptr && neighbour->state_ == Block::State::kFree &&
           (neighbour->free_key_ == key || neighbour->free_key_ == kAnyStream || key == kAnyStream);
  }

  // Makes |block| free for |key| and merges it with free neighbours it may share a key with: a
  // block that any stream may take merges with one of stream S into one of stream S.
  void make_free(Block* block, uintptr_t key) {
    FreeSet& pool = block->small_ ? small_free_ : large_free_;
    Block* prev = block->prev_;
    if (mergeable(prev, key)) {
      if (key == kAnyStream) key = prev->free_key_;
      pool.erase(pool.iterator_to(*prev));
      block->offset_ = prev->offset_;
      block->size_ += prev->size_;
      block->prev_ = prev->prev_;
      if (block->prev_ != nullptr) {
        block->prev_->next_ = block;
      } else {
        block->segment_->first = block;
      }
      recycle(prev);
    }
    Block* next = block->next_;
    if (mergeable(next, key)) {
      if (key == kAnyStream) key = next->free_key_;
      pool.erase(pool.iterator_to(*next));
      block->size_ += next->size_;
      block->next_ = next->next_;
      if (block->next_ != nullptr) block->next_->prev_ = block;
      recycle(next);
    }
    block->state_ = Block::State::kFree;
    block->free_key_ = key;
    pool.insert(*block);
  }

  // When |key|'s stream finds nothing of its own, other streams' fitting free blocks start
  // their way over: one event per stream; they become free for any stream once it is done.
  bool move_other_streams_to_pending(FreeSet& pool, bool small, uintptr_t key, size_t rounded) {
    bool moved = false;
    auto it = pool.begin();
    while (it != pool.end()) {
      uintptr_t other = it->free_key_;
      auto next_stream = pool.lower_bound(FreeKey{other + 1, 0, 0, 0}, KeyLess());
      if (other == key || other == kAnyStream) {
        it = next_stream;
        continue;
      }
      std::vector<Block*> candidates;
      for (it = pool.lower_bound(FreeKey{other, rounded, 0, 0}, KeyLess()); it != next_stream;
           ++it) {
        if (!fits(*it, small, rounded)) break;
        candidates.push_back(&*it);
      }
      it = next_stream;
      if (candidates.empty()) continue;
      void* event = nullptr;
      if (!backend_.record_event(reinterpret_cast<void*>(other), &event).ok()) continue;
      for (Block* block : candidates) {
        pool.erase(pool.iterator_to(*block));
        block->state_ = Block::State::kPending;
        block->pending_events_ = 1;
        block->key_after_pending_ = kAnyStream;
      }
      pending_.push_back(
          PendingEvent{event, reinterpret_cast<void*>(other), std::move(candidates)});
      moved = true;
    }
    return moved;
  }

  void complete(PendingEvent& pending) {
    backend_.release_event(pending.event);
    for (Block* block : pending.blocks) {
      if (--block->pending_events_ == 0) make_free(block, block->key_after_pending_);
    }
  }

  // Frees the blocks of every pending event that is done; keeps the rest. An
  // event that reports an error belongs to a stream that failed: its work up
  // to the event has ended (the failed state skips the rest), so nothing can
  // still write those blocks. The allocator waits for the event once more (a
  // plugin that reports the error early has then drained it too) and frees
  // them; the error itself is the stream's to report, not the allocator's.
  void process_events() {
    size_t kept = 0;
    for (size_t i = 0; i < pending_.size(); ++i) {
      bool done = false;
      if (!backend_.query_event(pending_[i].event, &done).ok()) {
        (void)backend_.synchronize_event(pending_[i].event);
        done = true;
      }
      if (done) {
        complete(pending_[i]);
      } else {
        if (kept != i) pending_[kept] = std::move(pending_[i]);
        ++kept;
      }
    }
    pending_.resize(kept);
  }

  // Waits for every pending event, a failed one included (see process_events).
  void synchronize_pending() {
    for (PendingEvent& pending : pending_) {
      (void)backend_.synchronize_event(pending.event);
      complete(pending);
    }
    pending_.clear();
  }

  Status new_segment(bool small, size_t rounded, Block** out_block) {
    size_t size = small ? config_.small_segment_size
                        : round_up(rounded, std::max(kLargeSegmentGranularity, granularity_));
    void* memory = nullptr;
    OAR_RETURN_IF_ERROR(backend_.allocate(size, &memory));
    ++stats_.backend_allocations;
    auto* segment = new Segment();
    segment->memory = memory;
    segment->size = size;
    segment->id = next_segment_id_++;
    segments_.push_back(*segment);
    ++stats_.segment_count;
    stats_.reserved_bytes += size;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);

    Block* block = new_block();
    block->memory_ = memory;
    block->segment_ = segment;
    block->segment_id_ = segment->id;
    block->small_ = small;
    block->offset_ = 0;
    block->size_ = size;
    block->prev_ = nullptr;
    block->next_ = nullptr;
    block->state_ = Block::State::kAllocated;  // not in a free set
    segment->first = block;
    *out_block = block;
    return Status();
  }

  void release_segment(Segment* segment) {
    for (Block* block = segment->first; block != nullptr;) {
      Block* next = block->next_;
      if (block->state_ == Block::State::kFree) {
        FreeSet& pool = block->small_ ? small_free_ : large_free_;
        pool.erase(pool.iterator_to(*block));
      }
      recycle(block);
      block = next;
    }
    segments_.erase(segments_.iterator_to(*segment));
    --stats_.segment_count;
    stats_.reserved_bytes -= segment->size;
    backend_.deallocate(segment->memory);
    delete segment;
  }

  // Releases every segment whose blocks are all free.
  void release_free_segments() {
    for (auto it = segments_.begin(); it != segments_.end();) {
      Segment* segment = &*it;
      ++it;
      bool all_free = true;
      for (Block* block = segment->first; block != nullptr; block = block->next_) {
        all_free = all_free && block->state_ == Block::State::kFree;
      }
      if (all_free) release_segment(segment);
    }
  }

  Result<Block*> allocate_uncached(size_t size, size_t rounded, void* stream) {
    Block* block = nullptr;
    void* memory = nullptr;
    Status status = backend_.allocate(rounded, &memory);
    if (!status.ok()) {
      if (status.code() != OAR_STATUS_RESOURCE_EXHAUSTED) return status;
      ++stats_.oom_count;
      return out_of_memory(size, status);
    }
    ++stats_.backend_allocations;
    auto* segment = new Segment();
    segment->memory = memory;
    segment->size = rounded;
    segment->id = next_segment_id_++;
    segments_.push_back(*segment);
    ++stats_.segment_count;
    stats_.reserved_bytes += rounded;
    stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
    block = new_block();
    block->memory_ = memory;
    block->segment_ = segment;
    block->segment_id_ = segment->id;
    block->offset_ = 0;
    block->size_ = rounded;
    block->state_ = Block::State::kAllocated;
    block->stream_ = stream;
    block->requested_size_ = size;
    segment->first = block;
    count_allocation(rounded);
    return block;
  }

  void count_allocation(size_t size) {
    ++stats_.allocation_count;
    ++stats_.active_blocks;
    stats_.allocated_bytes += size;
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
  }

  Status out_of_memory(size_t size, const Status& cause) const {
    size_t cached = stats_.reserved_bytes - stats_.allocated_bytes;
    std::string message = "out of memory: tried to allocate " + format_bytes(size) +
                          "; the allocator holds " + format_bytes(stats_.allocated_bytes) +
                          " allocated and " + format_bytes(stats_.reserved_bytes) + " reserved (" +
                          format_bytes(cached) +
                          " cached but unusable for this request, e.g. fragmented or in use "
                          "by another stream). Free tensors and call empty_cache(), or set "
                          "OAR_ALLOC_CONF (e.g. max_split_size_mb) to reduce fragmentation";
    if (!cause.ok() && !cause.message().empty()) message += " [backend: " + cause.message() + "]";
    return Status(OAR_STATUS_RESOURCE_EXHAUSTED, std::move(message));
  }

  // OAR_ALLOC_TRACE: opened for appending, so that several allocators of one process (one per
  // device) share the file; each starts its own section with a header line.
  void open_trace() {
    const char* path = std::getenv("OAR_ALLOC_TRACE");
    if (path == nullptr || *path == '\0') return;
    std::string name = path;
    for (size_t at = name.find("%p"); at != std::string::npos; at = name.find("%p", at)) {
      name.replace(at, 2, std::to_string(::getpid()));
    }
    trace_ = std::fopen(name.c_str(), "a");
    if (trace_ == nullptr) {
      std::fprintf(stderr, "oar: OAR_ALLOC_TRACE: cannot open %s; not tracing\n", name.c_str());
      return;
    }
    std::fprintf(trace_, "# oar-alloc-trace 1 alignment=%zu small_segment=%zu\n", granularity_,
                 config_.small_segment_size);
  }

  // Streams are numbered in the order the trace first names them.
  size_t trace_stream(void* stream) {
    auto it = std::find(trace_streams_.begin(), trace_streams_.end(), stream);
    if (it != trace_streams_.end()) return static_cast<size_t>(it - trace_streams_.begin());
    trace_streams_.push_back(stream);
    return trace_streams_.size() - 1;
  }

  AllocatorBackend& backend_;
  const AllocatorConfig config_;
  const size_t granularity_;
  const size_t small_limit_;
  mutable AllocatorLock mu_;
  FreeSet small_free_;
  FreeSet large_free_;
  SegmentList segments_;
  std::vector<PendingEvent> pending_;
  Block* spare_ = nullptr;  // recycled Block objects, linked through next_
  uint64_t next_segment_id_ = 0;
  AllocatorStats stats_;
  std::FILE* trace_ = nullptr;
  uint64_t next_trace_id_ = 0;
  std::vector<void*> trace_streams_;
};

}  // namespace detail

CachingAllocator::CachingAllocator(AllocatorBackend& backend, AllocatorConfig config)
    : impl_(std::make_unique<detail::AllocatorImpl>(backend, config)) {}

CachingAllocator::~CachingAllocator() = default;

Result<Block*> CachingAllocator::allocate(size_t size, void* stream, void* owner) {
  return impl_->allocate(size, stream, owner);
}

void CachingAllocator::set_owner(Block* block, void* owner) { impl_->set_owner(block, owner); }

std::vector<void*> CachingAllocator::owners() const { return impl_->owners(); }

void CachingAllocator::free(Block* block) { impl_->free(block); }

void CachingAllocator::record_stream(Block* block, void* stream) {
  impl_->record_stream(block, stream);
}

void CachingAllocator::forget_stream(void* stream) { impl_->forget_stream(stream); }

Status CachingAllocator::empty_cache() { return impl_->empty_cache(); }

AllocatorStats CachingAllocator::stats() const { return impl_->stats(); }

void CachingAllocator::reset_peak_stats() { impl_->reset_peak_stats(); }

size_t CachingAllocator::leaked_blocks() const { return impl_->leaked_blocks(); }

}  // namespace oar::alloc
