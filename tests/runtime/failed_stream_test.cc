// A stream that failed (the sim plugin's injected kernel fault) runs no more
// work, so the memory freed on it is reusable by other streams: nothing can
// still write it. It used to stay pinned behind events that only reported the
// error, even after the stream was destroyed, and empty_cache() rethrew it.
#include <cstdlib>

#include "cpu_fixture.h"
#include "oar/ops.hpp"

namespace oar::testing {
namespace {

class FailedStreamTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Every kernel of device 0 fails on the engine; copies never do.
    setenv("OAR_SIM_FAULTS", "kernel:1.0,seed:3,device:0", 1);
    setenv("OAR_SIM_PROFILE", "gpu", 1);
    RuntimeOptions options;
    options.use_environment = false;
    options.search_install_prefix = false;
    options.plugin_files = {OAR_TEST_SIM_MANIFEST};
    runtime_ = std::make_unique<Runtime>(options);
    unsetenv("OAR_SIM_FAULTS");
    unsetenv("OAR_SIM_PROFILE");
    if (runtime_->devices().empty()) GTEST_SKIP() << "the sim plugin did not load";
    device_ = runtime_->devices()[0];
  }

  // Fails |stream| with a kernel fault, observed by synchronize.
  void fail(Stream& stream) {
    Tensor x = Tensor::empty(*device_, {64}, dtype::f32, &stream);
    stream.fill(*x.buffer(), 0, 0, x.nbytes());
    ops::relu(stream, x);
    EXPECT_THROW(stream.synchronize(), Error);
  }

  static constexpr int64_t kElements = 1 << 18;  // 1 MiB of f32

  std::unique_ptr<Runtime> runtime_;
  Device* device_ = nullptr;
};

TEST_F(FailedStreamTest, MemoryFreedOnAFailedStreamIsReusedByAnotherStream) {
  Stream failed = device_->create_stream();
  Stream healthy = device_->create_stream();
  fail(failed);
  { Tensor t = Tensor::empty(*device_, {kElements}, dtype::f32, &failed); }
  const uint64_t reserved = device_->memory_stats().reserved_bytes;
  for (int i = 0; i < 20; ++i) {
    Tensor t = Tensor::empty(*device_, {kElements}, dtype::f32, &healthy);
    Tensor u = Tensor::empty(*device_, {kElements}, dtype::f32, &failed);
  }
  EXPECT_LE(device_->memory_stats().reserved_bytes, reserved + (4u << 20))
      << "memory freed on the failed stream stayed pinned";
  EXPECT_NO_THROW(device_->empty_cache()) << "empty_cache rethrew the stream's error";
}

TEST_F(FailedStreamTest, DestroyingAFailedStreamReleasesWhatWaitedOnIt) {
  Stream healthy = device_->create_stream();
  {
    Stream failed = device_->create_stream();
    fail(failed);
    Tensor t = Tensor::empty(*device_, {kElements}, dtype::f32, &healthy);
    // Used on the failed stream too: freeing it waits for an event there,
    // which can only report the error.
    t.buffer()->record_stream(failed);
    t = Tensor();
  }  // the failed stream is destroyed
  EXPECT_NO_THROW(device_->empty_cache());
  EXPECT_EQ(device_->memory_stats().reserved_bytes, 0u)
      << "memory of a destroyed failed stream stayed reserved";
  EXPECT_EQ(device_->memory_stats().active_blocks, 0u);
}

TEST_F(FailedStreamTest, AfterChurnOnAFailedStreamEmptyCacheReturnsEverything) {
  Stream failed = device_->create_stream();
  Stream healthy = device_->create_stream();
  fail(failed);
  for (int i = 0; i < 100; ++i) {
    Tensor bad = Tensor::empty(*device_, {kElements / 4}, dtype::f32, &failed);
    bad = Tensor();
    Tensor good = Tensor::empty(*device_, {kElements / 4}, dtype::f32, &healthy);
  }
  std::vector<float> values(16, 3.0f);
  Tensor check = Tensor::empty(*device_, {16}, dtype::f32, &healthy);
  check.copy_from_host(healthy, values.data());
  std::vector<float> back(16);
  check.copy_to_host(healthy, back.data());
  healthy.synchronize();
  EXPECT_EQ(back, values);
  EXPECT_NO_THROW(device_->empty_cache());
  // Only the segment holding |check| stays.
  EXPECT_LE(device_->memory_stats().segment_count, 1u);
}

}  // namespace
}  // namespace oar::testing
