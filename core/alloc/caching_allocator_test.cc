#include "core/alloc/caching_allocator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace oar::alloc {
namespace {

using ::testing::HasSubstr;

constexpr size_t kKiB = size_t{1} << 10;
constexpr size_t kMiB = size_t{1} << 20;

void* stream_handle(uintptr_t id) { return reinterpret_cast<void*>(id); }
void* const kS1 = stream_handle(0x51);
void* const kS2 = stream_handle(0x52);
void* const kS3 = stream_handle(0x53);

// Hands out unique fake handles within a capacity, and events whose completion the test
// controls: an event is done once the test calls finish() on its stream after recording it, or
// once the allocator synchronizes it.
class FakeBackend : public AllocatorBackend {
 public:
  explicit FakeBackend(size_t capacity = SIZE_MAX) : capacity_(capacity) {}
  ~FakeBackend() override {
    EXPECT_EQ(live_allocations(), 0u);
    EXPECT_EQ(live_events(), 0u);
  }

  Status allocate(size_t size, void** out_memory) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++allocate_calls_;
    if (fail_next_ != OAR_STATUS_OK) {
      oar_status_t code = fail_next_;
      fail_next_ = OAR_STATUS_OK;
      return Status(code, "injected failure");
    }
    if (size > capacity_ - used_) return Status(OAR_STATUS_RESOURCE_EXHAUSTED, "fake device full");
    void* memory = reinterpret_cast<void*>(next_handle_);
    next_handle_ += 0x1000;
    memory_[memory] = size;
    used_ += size;
    allocation_sizes_.push_back(size);
    *out_memory = memory;
    return Status();
  }
  void deallocate(void* memory) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memory_.find(memory);
    ASSERT_NE(it, memory_.end()) << "deallocate of an unknown handle";
    used_ -= it->second;
    memory_.erase(it);
    ++deallocate_calls_;
  }
  Status record_event(void* stream, void** out_event) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++record_calls_;
    uintptr_t id = next_event_++;
    events_[id] = Event{stream, ++recorded_[stream]};
    *out_event = reinterpret_cast<void*>(id);
    return Status();
  }
  Status query_event(void* event, bool* out_done) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++query_calls_;
    const Event& e = events_.at(reinterpret_cast<uintptr_t>(event));
    // A failed stream's events report its error, as P14 demands, never "done".
    if (failed_.count(e.stream) != 0) return Status(OAR_STATUS_INTERNAL, "injected stream fault");
    *out_done = finished_[e.stream] >= e.sequence;
    return Status();
  }
  Status synchronize_event(void* event) override {
    std::lock_guard<std::mutex> lock(mu_);
    ++synchronize_calls_;
    const Event& e = events_.at(reinterpret_cast<uintptr_t>(event));
    if (failed_.count(e.stream) != 0) return Status(OAR_STATUS_INTERNAL, "injected stream fault");
    finished_[e.stream] = std::max(finished_[e.stream], e.sequence);
    return Status();
  }
  void release_event(void* event) override {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_EQ(events_.erase(reinterpret_cast<uintptr_t>(event)), 1u);
  }

  // Marks all work submitted to |stream| so far as done.
  void finish(void* stream) {
    std::lock_guard<std::mutex> lock(mu_);
    finished_[stream] = recorded_[stream];
  }
  // Puts |stream| into the failed state: its events report an error from now on.
  void fail_stream(void* stream) {
    std::lock_guard<std::mutex> lock(mu_);
    failed_.insert(stream);
  }
  void fail_next_allocate(oar_status_t code) {
    std::lock_guard<std::mutex> lock(mu_);
    fail_next_ = code;
  }

  size_t live_allocations() const {
    std::lock_guard<std::mutex> lock(mu_);
    return memory_.size();
  }
  size_t live_events() const {
    std::lock_guard<std::mutex> lock(mu_);
    return events_.size();
  }
  size_t used() const {
    std::lock_guard<std::mutex> lock(mu_);
    return used_;
  }
  int allocate_calls() const { return allocate_calls_; }
  int deallocate_calls() const { return deallocate_calls_; }
  int record_calls() const { return record_calls_; }
  int query_calls() const { return query_calls_; }
  int synchronize_calls() const { return synchronize_calls_; }
  const std::vector<size_t>& allocation_sizes() const { return allocation_sizes_; }

 private:
  struct Event {
    void* stream;
    uint64_t sequence;
  };
  mutable std::mutex mu_;
  size_t capacity_;
  size_t used_ = 0;
  uintptr_t next_handle_ = 0x100000;
  uintptr_t next_event_ = 1;
  oar_status_t fail_next_ = OAR_STATUS_OK;
  std::map<void*, size_t> memory_;
  std::map<uintptr_t, Event> events_;
  std::map<void*, uint64_t> recorded_;
  std::map<void*, uint64_t> finished_;
  std::set<void*> failed_;
  std::vector<size_t> allocation_sizes_;
  int allocate_calls_ = 0;
  int deallocate_calls_ = 0;
  int record_calls_ = 0;
  int query_calls_ = 0;
  int synchronize_calls_ = 0;
};

Block* must_allocate(CachingAllocator& allocator, size_t size, void* stream) {
  Result<Block*> result = allocator.allocate(size, stream);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? result.value() : nullptr;
}

AllocatorConfig must_parse(std::string_view text) {
  Result<AllocatorConfig> result = AllocatorConfig::parse(text);
  EXPECT_TRUE(result.ok()) << result.status().to_string();
  return result.ok() ? result.value() : AllocatorConfig();
}

// --- Reuse, size classes, splitting and merging --------------------------------------------

TEST(CachingAllocatorTest, FreedBlockIsReusedOnSameStreamWithoutBackendCall) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* first = must_allocate(allocator, 1000, kS1);
  void* memory = first->memory();
  size_t offset = first->offset();
  allocator.free(first);
  Block* second = must_allocate(allocator, 1000, kS1);
  EXPECT_EQ(second->memory(), memory);
  EXPECT_EQ(second->offset(), offset);
  EXPECT_EQ(backend.allocate_calls(), 1);
  EXPECT_EQ(backend.record_calls(), 0);
  EXPECT_EQ(backend.query_calls(), 0);
  allocator.free(second);
}

TEST(CachingAllocatorTest, SameStreamAllocFreeLoopRecordsNoEvents) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  for (int i = 0; i < 100; ++i) {
    Block* small = must_allocate(allocator, 1024, kS1);
    Block* large = must_allocate(allocator, 8 * kMiB, kS1);
    allocator.free(small);
    allocator.free(large);
  }
  EXPECT_EQ(backend.allocate_calls(), 2);
  EXPECT_EQ(backend.record_calls(), 0);
  EXPECT_EQ(backend.query_calls(), 0);
  EXPECT_EQ(backend.synchronize_calls(), 0);
}

TEST(CachingAllocatorTest, SmallRequestsRoundUpTo512Bytes) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* one = must_allocate(allocator, 1, kS1);
  Block* just_over = must_allocate(allocator, 513, kS1);
  Block* exact = must_allocate(allocator, 1536, kS1);
  EXPECT_EQ(one->size(), 512u);
  EXPECT_EQ(one->requested_size(), 1u);
  EXPECT_EQ(just_over->size(), 1024u);
  EXPECT_EQ(exact->size(), 1536u);
  EXPECT_EQ(allocator.stats().allocated_bytes, 512u + 1024u + 1536u);
  allocator.free(one);
  allocator.free(just_over);
  allocator.free(exact);
}

TEST(CachingAllocatorTest, ZeroSizeRequestGetsADistinctMinimumBlock) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 0, kS1);
  Block* b = must_allocate(allocator, 0, kS1);
  EXPECT_EQ(a->size(), 512u);
  EXPECT_EQ(a->requested_size(), 0u);
  EXPECT_EQ(a->offset(), 0u);
  EXPECT_EQ(b->offset(), 512u);
  allocator.free(a);
  allocator.free(b);
}

TEST(CachingAllocatorTest, SmallRequestsAreCarvedFromOneTwoMiBSegment) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 1000, kS1);
  Block* b = must_allocate(allocator, 3000, kS1);
  Block* c = must_allocate(allocator, kMiB, kS1);
  EXPECT_EQ(a->memory(), b->memory());
  EXPECT_EQ(a->memory(), c->memory());
  EXPECT_EQ(a->offset(), 0u);
  EXPECT_EQ(b->offset(), 1024u);
  EXPECT_EQ(c->offset(), 1024u + 3072u);
  EXPECT_EQ(backend.allocation_sizes(), std::vector<size_t>({2 * kMiB}));
  EXPECT_EQ(allocator.stats().segment_count, 1u);
  allocator.free(a);
  allocator.free(b);
  allocator.free(c);
}

TEST(CachingAllocatorTest, SmallAndLargePoolsUseSeparateSegments) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* large = must_allocate(allocator, kMiB + 1, kS1);  // the large pool starts above 1 MiB
  allocator.free(large);
  Block* small = must_allocate(allocator, 4096, kS1);
  EXPECT_NE(small->memory(), large->memory());
  EXPECT_EQ(backend.allocation_sizes(), std::vector<size_t>({2 * kMiB, 2 * kMiB}));
  allocator.free(small);
}

TEST(CachingAllocatorTest, LargeRequestGetsSegmentRoundedUpTo2MiB) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* block = must_allocate(allocator, 5 * kMiB + 1, kS1);
  EXPECT_EQ(backend.allocation_sizes(), std::vector<size_t>({6 * kMiB}));
  // The remainder, 1 MiB - 512, is not worth a block of its own: the block takes it.
  EXPECT_EQ(block->size(), 6 * kMiB);
  EXPECT_EQ(block->requested_size(), 5 * kMiB + 1);
  allocator.free(block);
}

TEST(CachingAllocatorTest, LargeBlockIsSplitWhenRemainderExceedsOneMiB) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* big = must_allocate(allocator, 10 * kMiB, kS1);
  void* memory = big->memory();
  allocator.free(big);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  Block* b = must_allocate(allocator, 6 * kMiB, kS1);
  EXPECT_EQ(a->memory(), memory);
  EXPECT_EQ(a->offset(), 0u);
  EXPECT_EQ(a->size(), 4 * kMiB);
  EXPECT_EQ(b->memory(), memory);
  EXPECT_EQ(b->offset(), 4 * kMiB);
  EXPECT_EQ(b->size(), 6 * kMiB);
  EXPECT_EQ(backend.allocate_calls(), 1);
  allocator.free(a);
  allocator.free(b);
  EXPECT_EQ(allocator.stats().largest_free_block, 10 * kMiB);
}

TEST(CachingAllocatorTest, AdjacentFreeBlocksMergeOnFree) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 1024, kS1);
  Block* b = must_allocate(allocator, 1024, kS1);
  Block* c = must_allocate(allocator, 1024, kS1);
  ASSERT_EQ(c->offset(), 2048u);
  allocator.free(b);
  allocator.free(a);  // merges with b into [0, 2048)
  EXPECT_EQ(allocator.stats().largest_free_block, 2 * kMiB - 3072);
  Block* merged = must_allocate(allocator, 2048, kS1);  // best fit: exactly the merged block
  EXPECT_EQ(merged->offset(), 0u);
  EXPECT_EQ(merged->size(), 2048u);
  allocator.free(merged);
  allocator.free(c);  // merges both sides back into the whole segment
  EXPECT_EQ(allocator.stats().largest_free_block, 2 * kMiB);
  Block* whole = must_allocate(allocator, kMiB, kS1);
  EXPECT_EQ(whole->offset(), 0u);
  EXPECT_EQ(backend.allocate_calls(), 1);
  allocator.free(whole);
}

TEST(CachingAllocatorTest, BestFitPicksSmallestSufficientBlock) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* hole4k = must_allocate(allocator, 4096, kS1);  // [0, 4096)
  Block* sep1 = must_allocate(allocator, 512, kS1);     // [4096, 4608)
  Block* hole2k = must_allocate(allocator, 2048, kS1);  // [4608, 6656)
  Block* sep2 = must_allocate(allocator, 512, kS1);     // [6656, 7168)
  allocator.free(hole4k);
  allocator.free(hole2k);
  Block* fit = must_allocate(allocator, 1500, kS1);
  EXPECT_EQ(fit->offset(), 4608u);
  EXPECT_EQ(fit->size(), 1536u);  // split: 512 bytes stay free at 6144
  Block* tail = must_allocate(allocator, 512, kS1);
  EXPECT_EQ(tail->offset(), 6144u);
  for (Block* block : {sep1, sep2, fit, tail}) allocator.free(block);
}

TEST(CachingAllocatorTest, OffsetsAreAlignedToConfiguredAlignment) {
  FakeBackend backend;
  AllocatorConfig config;
  config.alignment = 4096;
  CachingAllocator allocator(backend, config);
  Block* a = must_allocate(allocator, 100, kS1);
  Block* b = must_allocate(allocator, 5000, kS1);
  Block* c = must_allocate(allocator, 1, kS1);
  EXPECT_EQ(a->offset(), 0u);
  EXPECT_EQ(a->size(), 4096u);
  EXPECT_EQ(b->offset(), 4096u);
  EXPECT_EQ(b->size(), 8192u);
  EXPECT_EQ(c->offset(), 12288u);
  for (Block* block : {a, b, c}) allocator.free(block);
}

TEST(CachingAllocatorTest, AlignmentBelow512StillAlignsTo512) {
  FakeBackend backend;
  AllocatorConfig config;
  config.alignment = 64;
  CachingAllocator allocator(backend, config);
  Block* a = must_allocate(allocator, 100, kS1);
  Block* b = must_allocate(allocator, 100, kS1);
  EXPECT_EQ(a->size(), 512u);
  EXPECT_EQ(b->offset(), 512u);
  allocator.free(a);
  allocator.free(b);
}

TEST(CachingAllocatorTest, OversizeBlockIsNeitherSplitNorUsedForSmallerRequests) {
  FakeBackend backend;
  CachingAllocator allocator(backend, must_parse("max_split_size_mb:4"));
  Block* big = must_allocate(allocator, 10 * kMiB, kS1);
  void* big_memory = big->memory();
  allocator.free(big);
  Block* medium = must_allocate(allocator, 3 * kMiB, kS1);  // not from the 10 MiB block
  EXPECT_NE(medium->memory(), big_memory);
  EXPECT_EQ(backend.allocation_sizes(), std::vector<size_t>({10 * kMiB, 4 * kMiB}));
  Block* oversize = must_allocate(allocator, 9 * kMiB, kS1);  // takes it whole
  EXPECT_EQ(oversize->memory(), big_memory);
  EXPECT_EQ(oversize->size(), 10 * kMiB);
  EXPECT_EQ(backend.allocate_calls(), 2);
  allocator.free(medium);
  allocator.free(oversize);
}

// --- Streams --------------------------------------------------------------------------------

TEST(CachingAllocatorTest, CrossStreamAllocationDoesNotTakeBlockBeforeEventIsDone) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.free(a);
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);
  EXPECT_NE(b->memory(), a_memory);
  EXPECT_EQ(backend.record_calls(), 1);  // one event on kS1 for the candidate
  EXPECT_EQ(backend.allocate_calls(), 2);
  allocator.free(b);
}

TEST(CachingAllocatorTest, CrossStreamReuseWaitsForEvent) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.free(a);
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);  // a is now waiting on an event on kS1
  allocator.free(b);
  backend.finish(kS1);
  Block* c = must_allocate(allocator, 4 * kMiB, kS3);  // the event is done: a is reusable
  EXPECT_EQ(c->memory(), a_memory);
  EXPECT_EQ(backend.allocate_calls(), 2);
  EXPECT_EQ(backend.synchronize_calls(), 0);
  EXPECT_GE(backend.query_calls(), 1);
  EXPECT_EQ(backend.live_events(), 0u);
  allocator.free(c);
}

TEST(CachingAllocatorTest, FreeBlockOfAForgottenStreamServesAnyStreamWithoutEvents) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.free(a);
  allocator.forget_stream(kS1);  // kS1 was drained and destroyed
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);
  EXPECT_EQ(b->memory(), a_memory);
  EXPECT_EQ(backend.record_calls(), 0) << "an event was recorded on a destroyed stream";
  EXPECT_EQ(backend.allocate_calls(), 1);
  allocator.free(b);
}

TEST(CachingAllocatorTest, BlockAllocatedOnAForgottenStreamIsFreedForAnyStream) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.forget_stream(kS1);
  allocator.free(a);  // freed after its stream died
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);
  EXPECT_EQ(b->memory(), a_memory);
  EXPECT_EQ(backend.record_calls(), 0) << "an event was recorded on a destroyed stream";
  allocator.free(b);
}

TEST(CachingAllocatorTest, ForgottenStreamLeavesRecordStreamLists) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  allocator.record_stream(a, kS2);
  allocator.forget_stream(kS2);
  allocator.free(a);
  EXPECT_EQ(backend.record_calls(), 0) << "an event was recorded on a destroyed stream";
  Block* b = must_allocate(allocator, 4 * kMiB, kS1);
  EXPECT_EQ(backend.allocate_calls(), 1);
  allocator.free(b);
}

// --- A stream that failed ---------------------------------------------------------------------
// Its events report the error instead of "done", but its work has ended (the
// failed state skips the rest): nothing can still write its memory.

TEST(CachingAllocatorTest, BlocksOfAFailedStreamBecomeReusableByOtherStreams) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.free(a);
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);  // a waits on an event on kS1
  allocator.free(b);
  backend.fail_stream(kS1);
  Block* c = must_allocate(allocator, 4 * kMiB, kS3);
  EXPECT_EQ(c->memory(), a_memory) << "a failed stream pinned its memory";
  EXPECT_EQ(backend.allocate_calls(), 2);
  EXPECT_EQ(backend.live_events(), 0u);
  allocator.free(c);
}

TEST(CachingAllocatorTest, FailedStreamDoesNotGrowTheCacheUnderRepeatedCrossStreamUse) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  backend.fail_stream(kS1);
  for (int i = 0; i < 100; ++i) {
    allocator.free(must_allocate(allocator, 4 * kMiB, kS1));
    allocator.free(must_allocate(allocator, 4 * kMiB, kS2));
    backend.finish(kS2);  // the healthy stream's work is done
  }
  EXPECT_LE(allocator.stats().segment_count, 2u);
  EXPECT_EQ(backend.live_events(), 0u);
}

TEST(CachingAllocatorTest, EmptyCacheAfterAStreamFailedReleasesItsMemoryWithoutError) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  allocator.record_stream(a, kS2);
  backend.fail_stream(kS2);
  allocator.free(a);  // pending on an event of the failed kS2
  Status status = allocator.empty_cache();
  EXPECT_TRUE(status.ok()) << "empty_cache rethrew a stream's error: " << status.to_string();
  EXPECT_EQ(allocator.stats().reserved_bytes, 0u);
  EXPECT_EQ(backend.live_allocations(), 0u);
}

TEST(CachingAllocatorTest, ForgettingAStreamCompletesTheEventsRecordedOnIt) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.free(a);
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);  // a waits on an event on kS1
  allocator.free(b);
  allocator.forget_stream(kS1);  // kS1 was drained (its work ended) and destroyed
  EXPECT_EQ(backend.live_events(), 0u) << "an event of a destroyed stream stayed pending";
  Block* c = must_allocate(allocator, 4 * kMiB, kS3);
  EXPECT_EQ(c->memory(), a_memory);
  EXPECT_EQ(backend.allocate_calls(), 2);
  allocator.free(c);
}

TEST(CachingAllocatorTest, OutOfMemorySynchronizesPendingEventsBeforeFailing) {
  FakeBackend backend(4 * kMiB);
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.free(a);
  Block* b = must_allocate(allocator, 4 * kMiB, kS2);
  EXPECT_EQ(b->memory(), a_memory);
  EXPECT_EQ(backend.record_calls(), 1);
  EXPECT_EQ(backend.synchronize_calls(), 1);
  EXPECT_EQ(allocator.stats().oom_count, 0u);
  EXPECT_EQ(allocator.stats().cache_hits, 1u);
  allocator.free(b);
}

TEST(CachingAllocatorTest, NullStreamIsAStreamLikeAnyOther) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 1024, nullptr);
  EXPECT_EQ(a->stream(), nullptr);
  allocator.free(a);
  Block* b = must_allocate(allocator, 1024, nullptr);
  EXPECT_EQ(b->offset(), 0u);
  EXPECT_EQ(backend.record_calls(), 0);
  allocator.free(b);
}

TEST(CachingAllocatorTest, FreeBlocksOfDifferentStreamsDoNotMerge) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 1024, kS1);
  Block* b = must_allocate(allocator, 1024, kS2);  // the untouched rest of the segment
  EXPECT_EQ(b->memory(), a->memory());
  EXPECT_EQ(b->offset(), 1024u);
  EXPECT_EQ(backend.record_calls(), 0);
  allocator.free(a);
  allocator.free(b);  // merges with the untouched rest, not with a
  EXPECT_EQ(allocator.stats().largest_free_block, 2 * kMiB - 1024);
  ASSERT_TRUE(allocator.empty_cache().ok());  // the segment is fully free all the same
  EXPECT_EQ(allocator.stats().reserved_bytes, 0u);
}

TEST(CachingAllocatorTest, RecordStreamDelaysReuseUntilEventIsDone) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.record_stream(a, kS2);
  allocator.free(a);
  EXPECT_EQ(backend.record_calls(), 1);
  Block* b = must_allocate(allocator, 4 * kMiB, kS1);  // even kS1 may not take a yet
  EXPECT_NE(b->memory(), a_memory);
  allocator.free(b);
  backend.finish(kS2);
  Block* c = must_allocate(allocator, 4 * kMiB, kS1);  // polled: a is back, on kS1
  EXPECT_EQ(c->memory(), a_memory);
  EXPECT_EQ(backend.allocate_calls(), 2);
  EXPECT_EQ(backend.live_events(), 0u);
  allocator.free(c);
}

TEST(CachingAllocatorTest, RecordStreamBlockReturnsToItsOwnStreamOnly) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  void* a_memory = a->memory();
  allocator.record_stream(a, kS2);
  allocator.free(a);
  backend.finish(kS2);
  // kS3 finds a free for kS1 only (kS1's work may still use it): it needs an event on kS1.
  Block* c = must_allocate(allocator, 4 * kMiB, kS3);
  EXPECT_NE(c->memory(), a_memory);
  EXPECT_EQ(backend.record_calls(), 2);
  allocator.free(c);
}

TEST(CachingAllocatorTest, RecordStreamOnOwnStreamOrTwiceRecordsOneEventPerOtherStream) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 1024, kS1);
  allocator.record_stream(a, kS1);
  allocator.record_stream(a, kS2);
  allocator.record_stream(a, kS2);
  allocator.record_stream(a, kS3);
  allocator.free(a);
  EXPECT_EQ(backend.record_calls(), 2);
  EXPECT_EQ(allocator.stats().largest_free_block, 2 * kMiB - 1024);  // a is pending
  ASSERT_TRUE(allocator.empty_cache().ok());
  EXPECT_EQ(backend.synchronize_calls(), 2);
  EXPECT_EQ(backend.live_events(), 0u);
  EXPECT_EQ(backend.live_allocations(), 0u);
}

// --- Out of memory ----------------------------------------------------------------------------

TEST(CachingAllocatorTest, OutOfMemoryReleasesCacheAndRetries) {
  FakeBackend backend(6 * kMiB);
  CachingAllocator allocator(backend);
  Block* a = must_allocate(allocator, 4 * kMiB, kS1);
  allocator.free(a);
  Block* b = must_allocate(allocator, 6 * kMiB, kS1);  // the cached 4 MiB must go first
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(backend.deallocate_calls(), 1);
  EXPECT_EQ(backend.allocate_calls(), 3);  // 4 MiB, failed 6 MiB, 6 MiB
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes, 6 * kMiB);
  EXPECT_EQ(stats.segment_count, 1u);
  EXPECT_EQ(stats.backend_allocations, 2u);
  EXPECT_EQ(stats.oom_count, 0u);
  allocator.free(b);
}

TEST(CachingAllocatorTest, OutOfMemoryKeepsSegmentsInUse) {
  FakeBackend backend(4 * kMiB);
  CachingAllocator allocator(backend);
  Block* small = must_allocate(allocator, 1024, kS1);
  Result<Block*> big = allocator.allocate(3 * kMiB, kS1);
  EXPECT_EQ(big.status().code(), OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(backend.deallocate_calls(), 0);
  EXPECT_EQ(small->memory(), reinterpret_cast<void*>(0x100000));
  allocator.free(small);
}

TEST(CachingAllocatorTest, FinalOutOfMemoryMessageNamesSizeUsageAndRemedies) {
  FakeBackend backend(4 * kMiB);
  CachingAllocator allocator(backend);
  Block* held = must_allocate(allocator, 4 * kMiB, kS1);
  Result<Block*> result = allocator.allocate(1000, kS1);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), OAR_STATUS_RESOURCE_EXHAUSTED);
  const std::string& message = result.status().message();
  EXPECT_THAT(message, HasSubstr("tried to allocate 1000 bytes"));
  EXPECT_THAT(message, HasSubstr("4194304 bytes (4.00 MiB) allocated"));
  EXPECT_THAT(message, HasSubstr("4194304 bytes (4.00 MiB) reserved"));
  EXPECT_THAT(message, HasSubstr("empty_cache"));
  EXPECT_THAT(message, HasSubstr("OAR_ALLOC_CONF"));
  EXPECT_THAT(message, HasSubstr("fake device full"));
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.oom_count, 1u);
  EXPECT_EQ(stats.allocation_count, 1u);
  EXPECT_EQ(backend.allocate_calls(), 3);  // 4 MiB, 2 MiB failed, 2 MiB retried after release
  allocator.free(held);
}

TEST(CachingAllocatorTest, ImpossibleSizeFailsWithResourceExhausted) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Result<Block*> result = allocator.allocate(SIZE_MAX, kS1);
  EXPECT_EQ(result.status().code(), OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_EQ(backend.allocate_calls(), 0);
  EXPECT_EQ(allocator.stats().oom_count, 1u);
}

TEST(CachingAllocatorTest, OtherBackendErrorIsReturnedWithoutRetry) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  backend.fail_next_allocate(OAR_STATUS_INTERNAL);
  Result<Block*> result = allocator.allocate(1024, kS1);
  EXPECT_EQ(result.status().code(), OAR_STATUS_INTERNAL);
  EXPECT_EQ(result.status().message(), "injected failure");
  EXPECT_EQ(backend.allocate_calls(), 1);
  EXPECT_EQ(allocator.stats().oom_count, 0u);
}

// --- Statistics and empty_cache -------------------------------------------------------------

TEST(CachingAllocatorTest, StatsCountExactly) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* small = must_allocate(allocator, 1000, kS1);
  Block* large = must_allocate(allocator, 6 * kMiB, kS1);
  allocator.free(small);
  small = must_allocate(allocator, 1000, kS1);

  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes, 1024 + 6 * kMiB);
  EXPECT_EQ(stats.reserved_bytes, 8 * kMiB);
  EXPECT_EQ(stats.peak_allocated_bytes, 1024 + 6 * kMiB);
  EXPECT_EQ(stats.peak_reserved_bytes, 8 * kMiB);
  EXPECT_EQ(stats.allocation_count, 3u);
  EXPECT_EQ(stats.free_count, 1u);
  EXPECT_EQ(stats.segment_count, 2u);
  EXPECT_EQ(stats.backend_allocations, 2u);
  EXPECT_EQ(stats.cache_hits, 1u);
  EXPECT_EQ(stats.oom_count, 0u);
  EXPECT_EQ(stats.largest_free_block, 2 * kMiB - 1024);
  EXPECT_EQ(stats.active_blocks, 2u);

  allocator.free(large);
  allocator.free(small);
  allocator.free(nullptr);  // not counted
  stats = allocator.stats();
  EXPECT_EQ(stats.allocated_bytes, 0u);
  EXPECT_EQ(stats.peak_allocated_bytes, 1024 + 6 * kMiB);
  EXPECT_EQ(stats.free_count, 3u);
  EXPECT_EQ(stats.active_blocks, 0u);
  EXPECT_EQ(stats.largest_free_block, 6 * kMiB);

  allocator.reset_peak_stats();
  stats = allocator.stats();
  EXPECT_EQ(stats.peak_allocated_bytes, 0u);
  EXPECT_EQ(stats.peak_reserved_bytes, 8 * kMiB);
  ASSERT_TRUE(allocator.empty_cache().ok());
  stats = allocator.stats();
  EXPECT_EQ(stats.reserved_bytes, 0u);
  EXPECT_EQ(stats.peak_reserved_bytes, 8 * kMiB);
  EXPECT_EQ(stats.segment_count, 0u);
  EXPECT_EQ(stats.largest_free_block, 0u);
  EXPECT_EQ(stats.backend_allocations, 2u);
}

TEST(CachingAllocatorTest, EmptyCacheReleasesOnlyFullyFreeSegments) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  Block* small = must_allocate(allocator, 1024, kS1);
  Block* large = must_allocate(allocator, 6 * kMiB, kS1);
  allocator.free(large);
  ASSERT_TRUE(allocator.empty_cache().ok());
  EXPECT_EQ(backend.deallocate_calls(), 1);
  EXPECT_EQ(backend.used(), 2 * kMiB);
  EXPECT_EQ(allocator.stats().reserved_bytes, 2 * kMiB);
  EXPECT_EQ(allocator.stats().segment_count, 1u);
  allocator.free(small);
  ASSERT_TRUE(allocator.empty_cache().ok());
  EXPECT_EQ(backend.live_allocations(), 0u);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0u);
  Block* again = must_allocate(allocator, 1024, kS1);  // the allocator still works
  EXPECT_EQ(backend.allocate_calls(), 3);
  allocator.free(again);
}

// --- Configuration ----------------------------------------------------------------------------

TEST(AllocatorConfigTest, EmptyStringGivesDefaults) {
  AllocatorConfig config = must_parse("");
  EXPECT_TRUE(config.caching);
  EXPECT_EQ(config.max_split_size, SIZE_MAX);
  EXPECT_EQ(config.alignment, 512u);
  EXPECT_EQ(config.small_segment_size, 2 * kMiB);
}

TEST(AllocatorConfigTest, ParsesEveryKey) {
  AllocatorConfig config =
      must_parse(" caching:0, max_split_size_mb:64,alignment : 4096,small_segment_kb:4096 ");
  EXPECT_FALSE(config.caching);
  EXPECT_EQ(config.max_split_size, 64 * kMiB);
  EXPECT_EQ(config.alignment, 4096u);
  EXPECT_EQ(config.small_segment_size, 4 * kMiB);
  EXPECT_TRUE(must_parse("caching:1").caching);
}

TEST(AllocatorConfigTest, UnknownKeyIsRejectedListingValidKeys) {
  Result<AllocatorConfig> result = AllocatorConfig::parse("caching:1,garbage_collection:1");
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.status().code(), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_THAT(result.status().message(), HasSubstr("'garbage_collection'"));
  EXPECT_THAT(result.status().message(),
              HasSubstr("caching, max_split_size_mb, alignment, small_segment_kb"));
}

TEST(AllocatorConfigTest, BadValuesAreRejectedNamingTheKey) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"caching:2", "caching"},
      {"caching:yes", "caching"},
      {"caching", "caching"},
      {"max_split_size_mb:0", "max_split_size_mb"},
      {"max_split_size_mb:abc", "max_split_size_mb"},
      {"max_split_size_mb:-5", "max_split_size_mb"},
      {"max_split_size_mb:99999999999999999999", "max_split_size_mb"},
      {"alignment:3", "alignment"},
      {"alignment:0", "alignment"},
      {"alignment:", "alignment"},
      {"small_segment_kb:0", "small_segment_kb"},
      {"alignment:4096,small_segment_kb:2", "small_segment_kb"},
      {"alignment:4096,alignment:512", "alignment"},
      {"caching:1,", "''"},
  };
  for (const auto& [text, key] : cases) {
    Result<AllocatorConfig> result = AllocatorConfig::parse(text);
    ASSERT_FALSE(result.ok()) << text;
    EXPECT_EQ(result.status().code(), OAR_STATUS_INVALID_ARGUMENT) << text;
    EXPECT_THAT(result.status().message(), HasSubstr(key)) << text;
  }
}

TEST(CachingAllocatorTest, SmallSegmentSizeIsConfigurable) {
  FakeBackend backend;
  CachingAllocator allocator(backend, must_parse("small_segment_kb:512"));
  Block* a = must_allocate(allocator, 1000, kS1);
  Block* b = must_allocate(allocator, 600 * kKiB, kS1);  // above 512 KiB: large pool
  EXPECT_EQ(backend.allocation_sizes(), std::vector<size_t>({512 * kKiB, 2 * kMiB}));
  allocator.free(a);
  allocator.free(b);
}

TEST(CachingAllocatorTest, CachingDisabledGoesToBackendEveryTime) {
  FakeBackend backend;
  CachingAllocator allocator(backend, must_parse("caching:0"));
  Block* a = must_allocate(allocator, 1000, kS1);
  EXPECT_EQ(a->offset(), 0u);
  EXPECT_EQ(a->size(), 1024u);
  EXPECT_EQ(allocator.stats().reserved_bytes, 1024u);
  allocator.free(a);
  EXPECT_EQ(backend.deallocate_calls(), 1);
  EXPECT_EQ(backend.live_allocations(), 0u);
  Block* b = must_allocate(allocator, 1000, kS1);
  EXPECT_EQ(backend.allocate_calls(), 2);
  EXPECT_EQ(backend.allocation_sizes(), std::vector<size_t>({1024, 1024}));
  AllocatorStats stats = allocator.stats();
  EXPECT_EQ(stats.cache_hits, 0u);
  EXPECT_EQ(stats.allocation_count, 2u);
  EXPECT_EQ(stats.segment_count, 1u);
  allocator.free(b);
  EXPECT_EQ(allocator.stats().reserved_bytes, 0u);
}

TEST(CachingAllocatorTest, CachingDisabledReportsOutOfMemory) {
  FakeBackend backend(1024);
  CachingAllocator allocator(backend, must_parse("caching:0"));
  Result<Block*> result = allocator.allocate(2048, kS1);
  EXPECT_EQ(result.status().code(), OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_THAT(result.status().message(), HasSubstr("2048 bytes"));
  EXPECT_EQ(allocator.stats().oom_count, 1u);
}

// --- Shutdown ---------------------------------------------------------------------------------

TEST(CachingAllocatorTest, DestructorReleasesAllBackendMemoryEvenWithLeakedBlocks) {
  FakeBackend backend;
  {
    CachingAllocator allocator(backend);
    must_allocate(allocator, 1024, kS1);      // leaked
    must_allocate(allocator, 6 * kMiB, kS2);  // leaked
    Block* pending = must_allocate(allocator, 3 * kMiB, kS1);
    allocator.record_stream(pending, kS2);
    allocator.free(pending);  // waits on an event at destruction
    Block* cached = must_allocate(allocator, 2048, kS1);
    allocator.free(cached);
    EXPECT_EQ(allocator.leaked_blocks(), 2u);
    EXPECT_EQ(backend.live_allocations(), 3u);
    EXPECT_EQ(backend.live_events(), 1u);
  }
  EXPECT_EQ(backend.live_allocations(), 0u);
  EXPECT_EQ(backend.live_events(), 0u);
  EXPECT_EQ(backend.synchronize_calls(), 1);
}

TEST(CachingAllocatorTest, DestructorReleasesLeakedBlocksWithCachingDisabled) {
  FakeBackend backend;
  {
    CachingAllocator allocator(backend, must_parse("caching:0"));
    must_allocate(allocator, 1024, kS1);
    EXPECT_EQ(allocator.leaked_blocks(), 1u);
  }
  EXPECT_EQ(backend.live_allocations(), 0u);
}

// --- Threads ----------------------------------------------------------------------------------

TEST(CachingAllocatorTest, ConcurrentAllocFreeKeepsBlocksDisjointAndStatsConsistent) {
  constexpr int kThreads = 4;
  constexpr int kIterations = 20000;
  FakeBackend backend(40 * kMiB);  // small enough to run out now and then
  CachingAllocator allocator(backend);
  std::mutex live_mu;
  std::map<std::pair<uintptr_t, size_t>, size_t> live;  // (memory, offset) -> size
  std::atomic<int> overlaps{0};
  std::atomic<uint64_t> successes{0};

  auto worker = [&](int index) {
    std::mt19937 rng(1234 + index);
    void* stream = stream_handle(0x100 + index % 3);  // two threads share a stream
    std::vector<Block*> held;
    for (int i = 0; i < kIterations; ++i) {
      bool do_alloc = held.size() < 2 || (held.size() < 16 && rng() % 2 == 0);
      if (do_alloc) {
        size_t size = rng() % 8 == 0 ? (1 + rng() % 6) * kMiB + rng() % 4096 : rng() % 200000;
        Result<Block*> result = allocator.allocate(size, stream);
        if (!result.ok()) continue;
        ++successes;
        Block* block = result.value();
        std::lock_guard<std::mutex> lock(live_mu);
        auto key = std::make_pair(reinterpret_cast<uintptr_t>(block->memory()), block->offset());
        auto next = live.lower_bound(key);
        if (next != live.end() && next->first.first == key.first &&
            next->first.second < key.second + block->size()) {
          ++overlaps;
        }
        if (next != live.begin()) {
          auto prev = std::prev(next);
          if (prev->first.first == key.first && prev->first.second + prev->second > key.second) {
            ++overlaps;
          }
        }
        live[key] = block->size();
        held.push_back(block);
      } else {
        size_t victim = rng() % held.size();
        Block* block = held[victim];
        held[victim] = held.back();
        held.pop_back();
        {
          std::lock_guard<std::mutex> lock(live_mu);
          live.erase(std::make_pair(reinterpret_cast<uintptr_t>(block->memory()), block->offset()));
        }
        if (rng() % 16 == 0) allocator.record_stream(block, stream_handle(0x200));
        allocator.free(block);
      }
      if (rng() % 64 == 0) backend.finish(stream);
      if (rng() % 64 == 0) backend.finish(stream_handle(0x200));
    }
    for (Block* block : held) {
      {
        std::lock_guard<std::mutex> lock(live_mu);
        live.erase(std::make_pair(reinterpret_cast<uintptr_t>(block->memory()), block->offset()));
      }
      allocator.free(block);
    }
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) threads.emplace_back(worker, i);
  for (std::thread& thread : threads) thread.join();

  EXPECT_EQ(overlaps.load(), 0);
  AllocatorStats stats = allocator.stats();
  EXPECT_GT(successes.load(), uint64_t{kThreads * kIterations / 4});
  EXPECT_EQ(stats.allocation_count, successes.load());
  EXPECT_EQ(stats.free_count, successes.load());
  EXPECT_EQ(stats.allocated_bytes, 0u);
  EXPECT_EQ(stats.active_blocks, 0u);
  EXPECT_EQ(stats.reserved_bytes, backend.used());
  EXPECT_EQ(stats.segment_count, backend.live_allocations());
  EXPECT_EQ(stats.cache_hits + stats.backend_allocations, stats.allocation_count);
  EXPECT_LE(stats.peak_reserved_bytes, 40 * kMiB);
  ASSERT_TRUE(allocator.empty_cache().ok());
  EXPECT_EQ(allocator.stats().reserved_bytes, 0u);
  EXPECT_EQ(backend.live_allocations(), 0u);
  EXPECT_EQ(backend.live_events(), 0u);
}

}  // namespace
}  // namespace oar::alloc

namespace oar::alloc {
namespace {

// --- Owners (Device finds its live buffers through them) and OAR_ALLOC_TRACE ----------------

TEST(CachingAllocatorOwnerTest, OwnersAreTheLiveBlocksOwnersAndFollowSetOwner) {
  FakeBackend backend;
  CachingAllocator allocator(backend);
  int a = 0, b = 0, c = 0;
  Result<Block*> first = allocator.allocate(1000, kS1, &a);
  Result<Block*> second = allocator.allocate(3 * kMiB, kS1, &b);
  Result<Block*> unowned = allocator.allocate(100, kS1);
  ASSERT_TRUE(first.ok() && second.ok() && unowned.ok());
  EXPECT_EQ(first.value()->owner(), &a);
  std::vector<void*> owners = allocator.owners();
  std::sort(owners.begin(), owners.end());
  std::vector<void*> expected = {&a, &b};
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(owners, expected);
  allocator.set_owner(second.value(), &c);
  allocator.free(first.value());
  EXPECT_EQ(allocator.owners(), std::vector<void*>{&c});
  allocator.free(second.value());
  allocator.free(unowned.value());
  EXPECT_TRUE(allocator.owners().empty());
  // A reused block does not keep its previous owner.
  Result<Block*> again = allocator.allocate(1000, kS1);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again.value()->owner(), nullptr);
  allocator.free(again.value());
}

TEST(CachingAllocatorTraceTest, RecordsEveryCallAsOneLine) {
  std::string path = ::testing::TempDir() + "oar_alloc_trace_test.%p";
  ASSERT_EQ(setenv("OAR_ALLOC_TRACE", path.c_str(), 1), 0);
  {
    FakeBackend backend;
    CachingAllocator allocator(backend);
    unsetenv("OAR_ALLOC_TRACE");
    Block* x = must_allocate(allocator, 1000, kS1);
    Block* y = must_allocate(allocator, 5 * kMiB, kS2);
    allocator.record_stream(x, kS2);
    allocator.free(x);
    allocator.free(y);
    allocator.forget_stream(kS2);
    EXPECT_TRUE(allocator.empty_cache().ok());
  }
  std::string name = ::testing::TempDir() + "oar_alloc_trace_test." + std::to_string(getpid());
  std::FILE* file = std::fopen(name.c_str(), "r");
  ASSERT_NE(file, nullptr) << name;
  std::string text;
  char chunk[256];
  size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) text.append(chunk, got);
  std::fclose(file);
  std::remove(name.c_str());
  EXPECT_EQ(text,
            "# oar-alloc-trace 1 alignment=512 small_segment=2097152\n"
            "a 1 1000 0\n"
            "a 2 5242880 1\n"
            "r 1 1\n"
            "f 1\n"
            "f 2\n"
            "s 1\n"
            "e\n");
}

}  // namespace
}  // namespace oar::alloc
