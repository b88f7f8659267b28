// The C++ API over plugins that break the ABI in ways the core can survive:
// the defect variants of tests/conformance/defects, loaded as plugins.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "oar/oar.hpp"

namespace oar {
namespace {

RuntimeOptions only(const char* manifest) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {manifest};
  return options;
}

// The plugin calls each host callback twice (callback_twice.cc). The
// callback must run once; the second call must not reach freed memory (ASan
// checks this test) and is ignored with a logged error.
TEST(MisbehavingPluginTest, HostCallbackCalledTwiceRunsOnce) {
  Runtime runtime(only(OAR_TEST_CALLBACK_TWICE_MANIFEST));
  ASSERT_EQ(runtime.devices().size(), 1u) << "the defect plugin did not load";
  Device& device = *runtime.devices()[0];
  Stream stream = device.create_stream();
  std::atomic<int> calls{0};
  for (int i = 0; i < 100; ++i) {
    stream.add_callback([&calls](oar_status_t) { ++calls; });
  }
  stream.synchronize();
  // The second calls may come from the plugin's synchronize path after the
  // first ones; give a late one time to show.
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(calls.load(), 100);
}

}  // namespace
}  // namespace oar
