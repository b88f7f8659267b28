// Two oar::Runtimes in one process share each plugin library they both load:
// the plugin is initialized once and finalized by the last runtime that uses
// it, each runtime has its own devices, streams and allocators, and errors
// reach whichever runtime made the failing call (docs/abi.md, "Two runtimes
// in one process").
#include <dlfcn.h>

#include <thread>

#include "core/loader/plugin.h"
#include "cpu_fixture.h"

namespace oar::testing {
namespace {

bool library_loaded(const std::string& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (handle == nullptr) return false;
  dlclose(handle);
  return true;
}

std::vector<float> relu_on(Device& device, Stream& stream, const std::vector<float>& values) {
  Tensor t = Tensor::empty(device, {int64_t(values.size())}, dtype::f32, &stream);
  t.copy_from_host(stream, values.data());
  dispatch(stream, OpId("relu"), {&t}, {&t});
  std::vector<float> out(values.size());
  t.copy_to_host(stream, out.data());
  stream.synchronize();
  return out;
}

TEST(TwoRuntimesTest, DestroyingTheFirstLeavesTheSecondsObjectsWorking) {
  auto first = std::make_unique<Runtime>(cpu_only());
  Runtime second(cpu_only());
  Device& device = second.device("cpu");
  Stream stream = device.create_stream();
  Buffer pinned = device.allocate_uncached(64, OAR_MEMORY_KIND_HOST_PINNED);
  Tensor kept = Tensor::empty(device, {4}, dtype::f32, &stream);
  std::vector<float> host = {-1, 2, -3, 4};
  kept.copy_from_host(stream, host.data());
  stream.synchronize();
  // Its own objects too, on the first runtime's device.
  Stream other = first->device("cpu").create_stream();
  first.reset();  // used to finalize the plugin under the second runtime
  EXPECT_FALSE(other.valid());
  EXPECT_EQ(relu_on(device, stream, {-1, 2, -3, 4}), (std::vector<float>{0, 2, 0, 4}));
  std::vector<float> back(4);
  kept.copy_to_host(stream, back.data());
  stream.synchronize();
  EXPECT_EQ(back, host);
  EXPECT_NE(pinned.host_address(), nullptr);
}

TEST(TwoRuntimesTest, TheyShareOnePluginInstanceButNotDevices) {
  Runtime first(cpu_only());
  Runtime second(cpu_only());
  Device& a = first.device("cpu");
  Device& b = second.device("cpu");
  EXPECT_EQ(&a.plugin(), &b.plugin());
  EXPECT_NE(&a, &b);
  EXPECT_NE(a.handle(), b.handle());
  EXPECT_EQ(first.plugins()[0].state, PluginState::kLoaded);
  EXPECT_EQ(second.plugins()[0].state, PluginState::kLoaded);
  EXPECT_EQ(second.plugins()[0].device_count, first.plugins()[0].device_count);
  EXPECT_EQ(second.plugins()[0].kernel_count, first.plugins()[0].kernel_count);
  Buffer x = a.allocate(1024);
  EXPECT_EQ(a.memory_stats().active_blocks, 1u);
  EXPECT_EQ(b.memory_stats().active_blocks, 0u) << "the allocators must stay apart";
}

TEST(TwoRuntimesTest, ErrorsOfTheFirstCarryThePluginsMessageWhileTheSecondLives) {
  Runtime first(cpu_only());
  Runtime second(cpu_only());
  for (Runtime* runtime : {&first, &second}) {
    Device& device = runtime->device("cpu");
    uint64_t too_big = device.properties().max_allocation_size + 1;
    try {
      device.allocate_uncached(too_big);
      ADD_FAILURE() << "an allocation above max_allocation_size succeeded";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), OAR_STATUS_INVALID_ARGUMENT) << e.what();
      EXPECT_NE(std::string(e.what()).find("max_allocation_size"), std::string::npos)
          << (runtime == &first ? "first" : "second") << " runtime lost the message: " << e.what();
    }
  }
}

TEST(TwoRuntimesTest, TheLastRuntimeUnloadsThePlugin) {
  auto first = std::make_unique<Runtime>(cpu_only());
  std::string library = first->plugins()[0].library_path;
  auto second = std::make_unique<Runtime>(cpu_only());
  first.reset();
  EXPECT_TRUE(library_loaded(library)) << "unloaded while the second runtime uses it";
  relu_on(second->device("cpu"), second->device("cpu").default_stream(), {1});
  second.reset();
  // A fresh runtime initializes it again and works.
  Runtime third(cpu_only());
  EXPECT_EQ(relu_on(third.device("cpu"), third.device("cpu").default_stream(), {-5, 5}),
            (std::vector<float>{0, 5}));
}

TEST(TwoRuntimesTest, ASecondRuntimeAskingForAnotherValidationSettingIsWarned) {
  Runtime first(cpu_only());
  RuntimeOptions validating = cpu_only();
  validating.validate = true;
  ::testing::internal::CaptureStderr();
  Runtime second(validating);
  std::string warning = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(warning.find("validation"), std::string::npos) << warning;
  EXPECT_FALSE(second.device("cpu").plugin().validating());
}

TEST(TwoRuntimesTest, RuntimesComeAndGoOnManyThreads) {
  Runtime anchor(cpu_only());  // keeps one instance alive throughout, half the time
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 10; ++i) {
        try {
          Runtime runtime(cpu_only());
          Device& device = runtime.device("cpu");
          Stream stream = device.create_stream();
          float x = float(t * 100 + i);
          if (relu_on(device, stream, {x, -x}) != std::vector<float>{x, 0}) ++failures;
        } catch (const std::exception& e) {
          ADD_FAILURE() << e.what();
          ++failures;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(failures.load(), 0);
}

}  // namespace
}  // namespace oar::testing
