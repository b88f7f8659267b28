// OAR_PLUGIN_PROBE=1: each plugin is loaded once in a child process before
// this one, so a plugin that crashes, ends the process or hangs while loading
// is named and skipped, and the process that asked lives on (issue 12, item
// 11). Without the probe each of these plugins would take the test binary
// down, so every test here fails before the feature exists.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <vector>

#include "loader_test_util.h"
#include "test_plugin.h"

namespace oar::loader_test {
namespace {

using ::testing::HasSubstr;

struct Crash {
  std::string plugin;  // in the crashing-plugins folder
  oar_status_t code;
  std::vector<std::string> words;
};

void PrintTo(const Crash& crash, std::ostream* out) { *out << crash.plugin; }

class CrashingPlugin : public ::testing::TestWithParam<Crash> {};

TEST_P(CrashingPlugin, IsNamedAndSkippedWhileCpuWorks) {
  const Crash& crash = GetParam();
  ScopedEnvironment environment;
  environment.set("OAR_PLUGIN_PROBE", "1");
  environment.set("OAR_PLUGIN_PROBE_TIMEOUT", "1");
  std::string manifest = crashing_manifest(crash.plugin);
  Runtime runtime(with_environment({kCpuManifest, manifest}));

  const PluginRecord* record = record_for(runtime, manifest);
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->state, PluginState::kSkipped);
  EXPECT_EQ(record->code, crash.code) << status_name(record->code) << ": " << record->reason;
  EXPECT_THAT(record->reason, HasSubstr("plugin '" + crash.plugin + "'"));
  EXPECT_THAT(record->reason, HasSubstr("probe process (OAR_PLUGIN_PROBE)"));
  for (const std::string& word : crash.words) EXPECT_THAT(record->reason, HasSubstr(word));
  expect_cpu_works(runtime);
}

INSTANTIATE_TEST_SUITE_P(
    LoaderProbe, CrashingPlugin,
    ::testing::Values(
        Crash{"c_segv_in_init", OAR_STATUS_INTERNAL, {"crashed with SIGSEGV", "in initialize"}},
        Crash{"c_raise_in_init", OAR_STATUS_INTERNAL, {"crashed with SIGSEGV", "in initialize"}},
        Crash{"c_abort_in_init", OAR_STATUS_INTERNAL, {"crashed with SIGABRT", "in initialize"}},
        Crash{"c_exit_in_init",
              OAR_STATUS_INTERNAL,
              {"ended the process with exit status " + std::to_string(OAR_TEST_EXIT_STATUS),
               "in initialize"}},
        Crash{"c_hang_in_init",
              OAR_STATUS_DEADLINE_EXCEEDED,
              {"did not finish loading within 1 s", "stuck in initialize"}},
        Crash{"c_segv_in_device_count",
              OAR_STATUS_INTERNAL,
              {"crashed with SIGSEGV", "in device_count"}}),
    [](const ::testing::TestParamInfo<Crash>& info) { return info.param.plugin; });

// LLVM (which PoCL and Mesa load) installs a SIGSEGV handler that returns when
// the signal was sent rather than caused by a fault: in a process that loaded
// the opencl plugin, a plugin calling raise(SIGSEGV) went on to be listed as
// loaded. The probe restores the default action in its child first.
void returning_handler(int) {}

TEST(LoaderProbe, CrashIsSeenThroughASignalHandlerThatReturns) {
  ScopedEnvironment environment;
  environment.set("OAR_PLUGIN_PROBE", "1");
  struct sigaction swallow {};
  swallow.sa_handler = &returning_handler;
  sigemptyset(&swallow.sa_mask);
  struct sigaction saved {};
  ASSERT_EQ(sigaction(SIGSEGV, &swallow, &saved), 0);
  std::string manifest = crashing_manifest("c_raise_in_init");
  Runtime runtime(with_environment({kCpuManifest, manifest}));
  sigaction(SIGSEGV, &saved, nullptr);

  const PluginRecord* record = record_for(runtime, manifest);
  ASSERT_NE(record, nullptr);
  EXPECT_EQ(record->state, PluginState::kSkipped) << "the handler hid the crash";
  EXPECT_THAT(record->reason, HasSubstr("crashed with SIGSEGV"));
  expect_cpu_works(runtime);
}

TEST(LoaderProbe, GoodPluginsLoadAsWithoutIt) {
  ScopedEnvironment environment;
  environment.set("OAR_PLUGIN_PROBE", "yes");
  std::string good = built_manifest("c_good");
  Runtime runtime(with_environment({kCpuManifest, good, built_manifest("c_init_fails")}));

  ASSERT_EQ(runtime.plugins().size(), 3u);
  EXPECT_EQ(runtime.plugins()[1].state, PluginState::kLoaded) << runtime.plugins()[1].reason;
  // A plugin that fails cleanly is reported by its own failure, not the probe's.
  EXPECT_EQ(runtime.plugins()[2].code, OAR_STATUS_UNAVAILABLE);
  EXPECT_THAT(runtime.plugins()[2].reason, HasSubstr(OAR_TEST_INIT_MESSAGE));
  expect_cpu_works(runtime);
}

// The probe child loads the plugin too; its warnings must not be printed a
// second time (`oar list` showed every plugin warning twice).
TEST(LoaderProbe, PluginWarningsArePrintedOnce) {
  ScopedEnvironment environment;
  environment.set("OAR_PLUGIN_PROBE", "yes");
  environment.set("OAR_TEST_LOG_AT_INIT", "1");
  ::testing::internal::CaptureStderr();
  {
    Runtime runtime(with_environment({built_manifest("c_good")}));
    EXPECT_EQ(runtime.plugins().at(0).state, PluginState::kLoaded) << runtime.plugins()[0].reason;
  }
  std::string output = ::testing::internal::GetCapturedStderr();
  size_t count = 0;
  for (size_t at = output.find(OAR_TEST_INIT_WARNING); at != std::string::npos;
       at = output.find(OAR_TEST_INIT_WARNING, at + 1)) {
    ++count;
  }
  EXPECT_EQ(count, 1u) << output;
}

TEST(LoaderProbe, HangIsCutAtTheTimeout) {
  ScopedEnvironment environment;
  environment.set("OAR_PLUGIN_PROBE", "1");
  environment.set("OAR_PLUGIN_PROBE_TIMEOUT", "0.5");
  auto start = std::chrono::steady_clock::now();
  Runtime runtime(with_environment({crashing_manifest("c_hang_in_init")}));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  EXPECT_EQ(runtime.plugins()[0].code, OAR_STATUS_DEADLINE_EXCEEDED);
  EXPECT_LT(seconds, 10.0);
}

}  // namespace
}  // namespace oar::loader_test
