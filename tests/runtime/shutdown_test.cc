// The runtime enforces the ABI's shutdown order even when the framework
// forgets to release its objects.
#include <gtest/gtest.h>

#include "cpu_fixture.h"

namespace oar::testing {
namespace {

TEST(ShutdownTest, ObjectsOutlivingTheRuntimeAreReleasedAndLeftEmpty) {
  Stream stream;
  Event event;
  Buffer cached;
  Buffer raw;
  {
    Runtime runtime(cpu_only());
    Device& cpu = runtime.device("cpu:0");
    stream = cpu.create_stream();
    event = cpu.create_event(OAR_EVENT_FLAG_TIMING);
    cached = cpu.allocate(1 << 20, &stream);
    raw = cpu.allocate_uncached(4096, OAR_MEMORY_KIND_HOST_PINNED);
    stream.fill(cached, 0, 1, 1 << 20);
    event.record(stream);
  }
  EXPECT_FALSE(stream.valid());
  EXPECT_FALSE(event.valid());
  EXPECT_FALSE(cached.valid());
  EXPECT_FALSE(raw.valid());
}  // destructors of the emptied objects must not touch the unloaded plugin

TEST(ShutdownTest, MovedObjectsStayTracked) {
  Buffer outer;
  {
    Runtime runtime(cpu_only());
    Device& cpu = runtime.device("cpu");
    std::vector<Buffer> buffers;
    for (int i = 0; i < 10; ++i) buffers.push_back(cpu.allocate(100 + i));  // reallocations move
    outer = std::move(buffers[3]);
    buffers.erase(buffers.begin());
  }
  EXPECT_FALSE(outer.valid());
}

TEST(ShutdownTest, UnknownDeviceNameListsTheDevicesThereAre) {
  Runtime runtime(cpu_only());
  try {
    runtime.device("gpu:7");
    FAIL() << "expected NOT_FOUND";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_NOT_FOUND);
    EXPECT_NE(std::string(e.what()).find("cpu:0"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace oar::testing
