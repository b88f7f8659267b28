// The caching allocator over the real cpu plugin: reuse, sub-allocation by
// offset, stream-ordered reuse with real streams and events, statistics.
#include <cstdlib>
#include <future>

#include "cpu_fixture.h"

namespace oar::testing {
namespace {

using AllocatorTest = CpuTest;

TEST_F(AllocatorTest, FreedBufferIsReusedWithoutAskingThePlugin) {
  oar_memory_t memory;
  uint64_t offset;
  {
    Buffer first = device().allocate(1000);
    memory = first.memory();
    offset = first.offset();
  }
  MemoryStats before = device().memory_stats();
  Buffer second = device().allocate(1000);
  MemoryStats after = device().memory_stats();
  EXPECT_EQ(second.memory(), memory);
  EXPECT_EQ(second.offset(), offset);
  EXPECT_EQ(after.backend_allocations, before.backend_allocations);
  EXPECT_EQ(after.cache_hits, before.cache_hits + 1);
}

TEST_F(AllocatorTest, SmallBuffersShareOneAllocationAtDistinctOffsets) {
  Buffer a = device().allocate(700);
  Buffer b = device().allocate(700);
  EXPECT_EQ(a.memory(), b.memory()) << "small buffers are carved from one segment";
  EXPECT_NE(a.offset(), b.offset());
  EXPECT_GE(b.offset() > a.offset() ? b.offset() - a.offset() : a.offset() - b.offset(), 700u);
  device().upload(a, 0, std::vector<uint8_t>(700, 1).data(), 700);
  device().upload(b, 0, std::vector<uint8_t>(700, 2).data(), 700);
  std::vector<uint8_t> result(700);
  device().download(result.data(), a, 0, 700);
  EXPECT_EQ(result, std::vector<uint8_t>(700, 1)) << "writing b must not touch a";
}

TEST_F(AllocatorTest, MemoryFreedOnABusyStreamIsNotReusedByAnotherStream) {
  // 4 MiB blocks fill their segments exactly, so each block is its own segment.
  const uint64_t size = 4u << 20;
  Stream s1 = device().create_stream();
  Stream s2 = device().create_stream();
  std::promise<void> gate = block(s1);
  oar_memory_t memory;
  {
    Buffer b1 = device().allocate(size, &s1);
    s1.fill(b1, 0, 0x11, size);  // pending: s1 is held
    memory = b1.memory();
  }
  Buffer b2 = device().allocate(size, &s2);
  EXPECT_NE(b2.memory(), memory) << "s2 got memory that s1's pending fill still writes";
  gate.set_value();
  s1.synchronize();
  uint64_t backend_allocations = device().memory_stats().backend_allocations;
  Buffer b3 = device().allocate(size, &s2);
  EXPECT_EQ(b3.memory(), memory) << "once s1's work is done, its memory serves s2";
  EXPECT_EQ(device().memory_stats().backend_allocations, backend_allocations);
}

TEST_F(AllocatorTest, RecordStreamDelaysReuseUntilThatStreamIsDone) {
  Stream owner = device().create_stream();
  Stream user = device().create_stream();
  std::promise<void> gate = block(user);
  oar_memory_t memory;
  uint64_t offset;
  {
    Buffer buffer = device().allocate(8192, &owner);
    buffer.record_stream(user);
    memory = buffer.memory();
    offset = buffer.offset();
  }
  Buffer next = device().allocate(8192, &owner);
  EXPECT_FALSE(next.memory() == memory && next.offset() == offset)
      << "reused while another stream that used it is still busy";
  gate.set_value();
  user.synchronize();
}

TEST_F(AllocatorTest, StatisticsFollowAllocationsAndPeak) {
  device().empty_cache();
  device().reset_peak_memory_stats();
  MemoryStats start = device().memory_stats();
  {
    Buffer a = device().allocate(3 << 20);
    Buffer b = device().allocate(1 << 20);
    MemoryStats during = device().memory_stats();
    EXPECT_GE(during.allocated_bytes, start.allocated_bytes + (4u << 20));
    EXPECT_EQ(during.active_blocks, start.active_blocks + 2);
    EXPECT_EQ(during.allocation_count, start.allocation_count + 2);
  }
  MemoryStats end = device().memory_stats();
  EXPECT_EQ(end.allocated_bytes, start.allocated_bytes);
  EXPECT_GE(end.peak_allocated_bytes, start.allocated_bytes + (4u << 20));
  EXPECT_EQ(end.free_count, start.free_count + 2);
  EXPECT_GT(end.reserved_bytes, 0u) << "freed memory stays cached";
  device().empty_cache();
  EXPECT_EQ(device().memory_stats().reserved_bytes, 0u);
}

TEST_F(AllocatorTest, BadAllocatorSettingsAreReportedByName) {
  setenv("OAR_ALLOC_CONF", "max_split_size_mb:lots", 1);
  Runtime runtime(cpu_only());
  std::string message =
      error_of(OAR_STATUS_INVALID_ARGUMENT, [&] { runtime.devices()[0]->allocate(16); });
  unsetenv("OAR_ALLOC_CONF");
  EXPECT_NE(message.find("max_split_size_mb"), std::string::npos) << message;
  // Named once: the message used to read "OAR_ALLOC_CONF: OAR_ALLOC_CONF: ...".
  size_t first = message.find("OAR_ALLOC_CONF");
  ASSERT_NE(first, std::string::npos) << message;
  EXPECT_EQ(message.find("OAR_ALLOC_CONF", first + 1), std::string::npos) << message;
}

TEST_F(AllocatorTest, CachingCanBeTurnedOff) {
  setenv("OAR_ALLOC_CONF", "caching:0", 1);
  Runtime runtime(cpu_only());
  Device& cpu = *runtime.devices()[0];
  { Buffer a = cpu.allocate(1000); }
  { Buffer b = cpu.allocate(1000); }
  unsetenv("OAR_ALLOC_CONF");
  MemoryStats stats = cpu.memory_stats();
  EXPECT_EQ(stats.backend_allocations, 2u);
  EXPECT_EQ(stats.cache_hits, 0u);
  EXPECT_EQ(stats.reserved_bytes, 0u);
}

}  // namespace
}  // namespace oar::testing
