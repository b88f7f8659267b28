// Tests of the runner, expectations and reports with a synthetic registry:
// every way a test can end (pass, fail, skip, oar::Error, segfault, abort,
// hang, known failure, unsupported) and that the run goes on after each.
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "conformance/harness/bundle.h"
#include "conformance/harness/expectations.h"
#include "conformance/harness/profiles.h"
#include "conformance/harness/report.h"
#include "conformance/harness/runner.h"
#include "conformance/harness/signing.h"
#include "oar/ops.hpp"

namespace oar::conformance {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

constexpr milliseconds kShortTimeout{2000};

Target open_cpu() {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {OAR_TEST_CPU_MANIFEST};
  Target target;
  target.runtime = std::make_unique<Runtime>(options);
  if (target.runtime->devices().empty()) {
    throw TargetError(TargetError::Kind::kNoDevices, "the cpu plugin has no device");
  }
  target.device = target.runtime->devices().front();
  return target;
}

void add(Registry& registry, std::string id, std::string group,
         std::function<void(TestContext&)> body, std::string op = "", std::string dtype = "") {
  const std::string area = id.substr(0, id.find('/'));
  registry.add(
      {std::move(id), area, std::move(op), std::move(dtype), std::move(group), std::move(body)});
}

void synthetic_suite(Registry& registry, const oar_device_properties_t&) {
  auto pass = [](TestContext&) {};
  add(registry, "basic/pass", "basic", pass, "add", "f32");
  add(
      registry, "basic/fail", "basic",
      [](TestContext&) { fail("expected <1> & \"2\", got 'three'"); }, "add", "f16");
  add(
      registry, "basic/skip", "basic", [](TestContext&) { skip("needs f64"); }, "add", "f64");
  add(
      registry, "basic/oar_error", "basic",
      [](TestContext&) { throw Error(OAR_STATUS_UNIMPLEMENTED, "no kernel for add/i8"); }, "add",
      "i8");
  add(registry, "basic/uses_device", "basic", [](TestContext& context) {
    expect(context.device.name() == "cpu:0", "device is " + context.device.name());
    Buffer buffer = context.device.allocate(64);
    const char text[] = "conformance";
    context.device.upload(buffer, 0, text, sizeof(text));
    char back[sizeof(text)] = {};
    context.device.download(back, buffer, 0, sizeof(back));
    expect(std::string(back) == text, "round trip through the device lost data");
  });
  add(
      registry, "segv/crash", "segv",
      [](TestContext&) {
        std::fprintf(stderr, "about to crash\n");
        std::raise(SIGSEGV);
      },
      "mul", "f32");
  add(registry, "segv/after", "segv", pass, "mul", "f32");
  add(registry, "abort/crash", "abort", [](TestContext&) { std::abort(); });
  add(registry, "hang/sleep", "hang",
      [](TestContext&) { std::this_thread::sleep_for(std::chrono::seconds(60)); });
  add(registry, "hang/after", "hang", pass);
  add(registry, "known/fails", "known", [](TestContext&) { fail("wrong rounding"); });
  add(registry, "known/passes", "known", pass);
  add(registry, "known/crashes", "known", [](TestContext&) { std::raise(SIGSEGV); });
  add(registry, "unsupported/would_crash", "unsupported",
      [](TestContext&) { std::raise(SIGSEGV); });
  add(registry, "solo/pass", "", pass);
}

Expectations synthetic_expectations() {
  Expectations expectations;
  expectations.known_failures = {{"known/*", "tracked as issue 7"}};
  expectations.unsupported = {{"unsupported/*", "no such hardware"}};
  return expectations;
}

// One run of the synthetic suite, shared by the tests that inspect it.
struct SyntheticRun {
  std::vector<TestCase> tests;
  std::vector<TestResult> results;
  std::vector<std::string> started;
  std::vector<std::string> delivered;
  std::map<std::string, TestResult> by_id;
};

const SyntheticRun& synthetic_run() {
  static const SyntheticRun run = [] {
    SyntheticRun run;
    oar_device_properties_t properties{};
    run.tests = select_tests(synthetic_suite, properties, "");
    RunOptions options;
    options.timeout = kShortTimeout;
    options.expectations = synthetic_expectations();
    options.on_start = [&](const TestCase& test) { run.started.push_back(test.id); };
    options.on_result = [&](const TestResult& result) { run.delivered.push_back(result.id); };
    run.results = run_tests(run.tests, open_cpu, synthetic_suite, options);
    for (const auto& result : run.results) run.by_id[result.id] = result;
    return run;
  }();
  return run;
}

const TestResult& result(const std::string& id) {
  const auto& by_id = synthetic_run().by_id;
  auto found = by_id.find(id);
  if (found == by_id.end()) throw std::runtime_error("no result for " + id);
  return found->second;
}

TEST(Runner, PassingTestPasses) {
  EXPECT_EQ(result("basic/pass").status, Status::kPassed);
  EXPECT_EQ(result("basic/pass").message, "");
  EXPECT_EQ(result("solo/pass").status, Status::kPassed);
}

TEST(Runner, TestBodiesReachTheDeviceUnderTest) {
  EXPECT_EQ(result("basic/uses_device").status, Status::kPassed)
      << result("basic/uses_device").message;
}

TEST(Runner, TestFailureFailsWithItsMessage) {
  EXPECT_EQ(result("basic/fail").status, Status::kFailed);
  EXPECT_EQ(result("basic/fail").message, "expected <1> & \"2\", got 'three'");
}

TEST(Runner, TestSkipSkipsWithItsReason) {
  EXPECT_EQ(result("basic/skip").status, Status::kSkipped);
  EXPECT_EQ(result("basic/skip").message, "needs f64");
}

TEST(Runner, OarErrorFailsWithItsStatusAndMessage) {
  EXPECT_EQ(result("basic/oar_error").status, Status::kFailed);
  EXPECT_NE(result("basic/oar_error").message.find("UNIMPLEMENTED"), std::string::npos);
  EXPECT_NE(result("basic/oar_error").message.find("no kernel for add/i8"), std::string::npos);
}

TEST(Runner, SegfaultIsCrashedWithTheSignalNameAndTheLastOutput) {
  const TestResult& crash = result("segv/crash");
  EXPECT_EQ(crash.status, Status::kCrashed);
  EXPECT_NE(crash.message.find("SIGSEGV"), std::string::npos) << crash.message;
  EXPECT_NE(crash.message.find("about to crash"), std::string::npos) << crash.message;
}

TEST(Runner, AbortIsCrashed) {
  EXPECT_EQ(result("abort/crash").status, Status::kCrashed);
  EXPECT_NE(result("abort/crash").message.find("SIGABRT"), std::string::npos);
}

TEST(Runner, HangIsTimeoutAfterTheTestTimeout) {
  const TestResult& hang = result("hang/sleep");
  EXPECT_EQ(hang.status, Status::kTimeout);
  EXPECT_NE(hang.message.find("timeout"), std::string::npos);
  EXPECT_GE(hang.duration_ms, kShortTimeout.count() * 0.9);
  EXPECT_LT(hang.duration_ms, kShortTimeout.count() * 3);
}

// The limit is per test: a group whose tests each take 60% of it runs in
// twice the limit and passes; a hang after them is blamed on the hanging test.
TEST(Runner, TimeoutBelongsToOneTestNotToTheGroup) {
  const auto slow = [](TestContext&) { std::this_thread::sleep_for(milliseconds(600)); };
  auto suite = [&](Registry& registry, const oar_device_properties_t&) {
    for (int i = 0; i < 4; ++i) add(registry, "slow/test" + std::to_string(i), "slow", slow);
    add(registry, "slow/hangs", "slow",
        [](TestContext&) { std::this_thread::sleep_for(std::chrono::seconds(60)); });
    add(registry, "slow/after", "slow", slow);
  };
  const auto tests = select_tests(suite, {}, "");
  RunOptions options;
  options.timeout = milliseconds(1000);
  const auto started = std::chrono::steady_clock::now();
  const auto results = run_tests(tests, open_cpu, suite, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(results.size(), 6u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(results[i].status, Status::kPassed) << results[i].message;
  EXPECT_EQ(results[4].id, "slow/hangs");
  EXPECT_EQ(results[4].status, Status::kTimeout);
  EXPECT_EQ(results[5].status, Status::kPassed) << results[5].message;
  EXPECT_LT(seconds, 15) << "the hang cost more than about one limit";
}

// A helper process of the plugin's holds every descriptor the test process
// had, the result pipe included, and outlives it: the runner must neither
// wait for it nor leave it behind.
TEST(Runner, HelperProcessThatOutlivesTheTestNeitherStallsTheRunNorSurvivesIt) {
  const std::string pid_file = std::filesystem::path(::testing::TempDir()) /
                               ("oar-helper-" + std::to_string(::getpid()) + ".pid");
  auto suite = [&](Registry& registry, const oar_device_properties_t&) {
    add(registry, "helper/starts", "helper", [&](TestContext&) {
      const pid_t helper = ::fork();
      if (helper == 0) {
        while (true) ::pause();
      }
      std::ofstream(pid_file) << helper;
    });
    add(registry, "helper/after", "helper", [](TestContext&) {});
  };
  const auto tests = select_tests(suite, {}, "");
  RunOptions options;
  options.timeout = std::chrono::seconds(20);
  const auto started = std::chrono::steady_clock::now();
  const auto results = run_tests(tests, open_cpu, suite, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::kPassed) << results[0].message;
  EXPECT_EQ(results[1].status, Status::kPassed) << results[1].message;
  EXPECT_LT(seconds, 10) << "the runner waited for the helper";
  pid_t helper = 0;
  std::ifstream(pid_file) >> helper;
  std::filesystem::remove(pid_file);
  ASSERT_GT(helper, 0);
  EXPECT_NE(::kill(helper, 0), 0) << "helper " << helper << " is still there";
  EXPECT_EQ(errno, ESRCH) << "helper " << helper << " was killed but not reaped";
}

// A daemon (a helper that left the test process's group and session) is
// reparented to the runner, which kills and reaps it.
TEST(Runner, DaemonThatLeftTheProcessGroupIsKilledToo) {
  const std::string pid_file = std::filesystem::path(::testing::TempDir()) /
                               ("oar-daemon-" + std::to_string(::getpid()) + ".pid");
  auto suite = [&](Registry& registry, const oar_device_properties_t&) {
    add(registry, "daemon/starts", "daemon", [&](TestContext&) {
      if (::fork() == 0) {
        // Only async-signal-safe calls after fork() in a threaded process.
        ::setsid();
        const pid_t daemon = ::fork();
        if (daemon == 0) {
          while (true) ::pause();
        }
        char text[16];
        size_t length = 0;
        for (pid_t rest = daemon; rest > 0; rest /= 10) text[length++] = char('0' + rest % 10);
        std::reverse(text, text + length);
        const int fd = ::open(pid_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0 && ::write(fd, text, length) == ssize_t(length)) ::close(fd);
        ::_exit(0);
      }
      std::this_thread::sleep_for(milliseconds(200));
    });
  };
  const auto tests = select_tests(suite, {}, "");
  RunOptions options;
  options.timeout = std::chrono::seconds(20);
  const auto results = run_tests(tests, open_cpu, suite, options);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0].status, Status::kPassed) << results[0].message;
  pid_t daemon = 0;
  std::ifstream(pid_file) >> daemon;
  std::filesystem::remove(pid_file);
  ASSERT_GT(daemon, 0);
  EXPECT_NE(::kill(daemon, 0), 0) << "daemon " << daemon << " is still there";
}

TEST(Runner, HangWhileClosingTheDeviceIsAShutdownTimeout) {
  auto suite = [](Registry& registry, const oar_device_properties_t&) {
    add(registry, "close/last", "close", [](TestContext& context) {
      // Closing the device waits for the stream's work: this callback.
      context.device.default_stream().add_callback(
          [](oar_status_t) { std::this_thread::sleep_for(std::chrono::seconds(60)); });
    });
  };
  const auto tests = select_tests(suite, {}, "");
  RunOptions options;
  options.timeout = milliseconds(1500);
  const auto results = run_tests(tests, open_cpu, suite, options);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::kPassed);
  EXPECT_EQ(results[1].id, "close/shutdown");
  EXPECT_EQ(results[1].status, Status::kTimeout);
}

TEST(Runner, TestsAfterACrashOrHangInTheirGroupRunInAFreshProcess) {
  EXPECT_EQ(result("segv/after").status, Status::kPassed) << result("segv/after").message;
  EXPECT_EQ(result("hang/after").status, Status::kPassed) << result("hang/after").message;
}

TEST(Runner, KnownFailureThatFailsOrCrashesIsKnownFailure) {
  EXPECT_EQ(result("known/fails").status, Status::kKnownFailure);
  EXPECT_NE(result("known/fails").message.find("tracked as issue 7"), std::string::npos);
  EXPECT_NE(result("known/fails").message.find("wrong rounding"), std::string::npos);
  EXPECT_EQ(result("known/crashes").status, Status::kKnownFailure);
}

TEST(Runner, KnownFailureThatPassesIsFailed) {
  EXPECT_EQ(result("known/passes").status, Status::kFailed);
  EXPECT_EQ(result("known/passes").message, "unexpectedly passed; remove it from known failures");
}

TEST(Runner, UnsupportedIsSkippedWithItsReasonAndNeverRuns) {
  EXPECT_EQ(result("unsupported/would_crash").status, Status::kSkipped);
  EXPECT_NE(result("unsupported/would_crash").message.find("no such hardware"), std::string::npos);
  const auto& started = synthetic_run().started;
  EXPECT_EQ(std::count(started.begin(), started.end(), "unsupported/would_crash"), 0);
}

TEST(Runner, EveryTestHasOneResultInRegistrationOrder) {
  const SyntheticRun& run = synthetic_run();
  ASSERT_EQ(run.results.size(), run.tests.size());
  for (size_t i = 0; i < run.tests.size(); ++i) EXPECT_EQ(run.results[i].id, run.tests[i].id);
  EXPECT_EQ(run.delivered.size(), run.tests.size());
  EXPECT_EQ(result("basic/fail").area, "basic");
  EXPECT_EQ(result("basic/fail").op, "add");
  EXPECT_EQ(result("basic/fail").dtype, "f16");
}

TEST(Runner, FilterSelectsByCommaSeparatedGlobs) {
  oar_device_properties_t properties{};
  std::vector<std::string> ids;
  for (const auto& test : select_tests(synthetic_suite, properties, "basic/*,solo/*")) {
    ids.push_back(test.id);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"basic/pass", "basic/fail", "basic/skip",
                                           "basic/oar_error", "basic/uses_device", "solo/pass"}));
}

TEST(Runner, DuplicateTestIdsAreRefused) {
  auto duplicated = [](Registry& registry, const oar_device_properties_t&) {
    add(registry, "a/b", "g", [](TestContext&) {});
    add(registry, "a/b", "g", [](TestContext&) {});
  };
  EXPECT_THROW(select_tests(duplicated, {}, ""), std::runtime_error);
}

TEST(Runner, DeviceThatCannotBeOpenedFailsTheGroupAndTheRunGoesOn) {
  int calls = 0;
  auto refusing = [&]() -> Target {
    ++calls;  // counted in the child: the parent's copy stays 0
    throw Error(OAR_STATUS_UNAVAILABLE, "device lost");
  };
  oar_device_properties_t properties{};
  const auto tests = select_tests(synthetic_suite, properties, "basic/pass,solo/pass");
  RunOptions options;
  options.timeout = kShortTimeout;
  const auto results = run_tests(tests, refusing, synthetic_suite, options);
  ASSERT_EQ(results.size(), 2u);
  for (const auto& r : results) {
    EXPECT_EQ(r.status, Status::kFailed);
    EXPECT_NE(r.message.find("device lost"), std::string::npos);
  }
  EXPECT_EQ(calls, 0) << "the target must be opened in the child, never in the parent";
}

TEST(Runner, CrashAtShutdownIsReportedAsItsOwnResult) {
  auto suite = [](Registry& registry, const oar_device_properties_t&) {
    add(registry, "x/last", "x", [](TestContext& context) {
      // Runs on the stream's worker after the body returned and its result
      // was sent; closing the device waits for it, so the crash hits shutdown.
      context.device.default_stream().add_callback([](oar_status_t) {
        std::this_thread::sleep_for(milliseconds(300));
        std::raise(SIGSEGV);
      });
    });
  };
  const auto tests = select_tests(suite, {}, "");
  RunOptions options;
  options.timeout = kShortTimeout;
  const auto results = run_tests(tests, open_cpu, suite, options);
  ASSERT_EQ(results.size(), 2u);
  EXPECT_EQ(results[0].status, Status::kPassed);
  EXPECT_EQ(results[1].id, "x/shutdown");
  EXPECT_EQ(results[1].status, Status::kCrashed);
  EXPECT_NE(results[1].message.find("SIGSEGV"), std::string::npos);
}

TEST(Probe, DescribesTheCpuDevice) {
  const TargetInfo info = probe(open_cpu, kShortTimeout);
  EXPECT_EQ(info.plugin.name, "cpu");
  EXPECT_EQ(info.device_name, "cpu:0");
  EXPECT_EQ(info.device_index, 0);
  EXPECT_FALSE(info.plugin.library_path.empty());
  EXPECT_GT(info.properties.total_memory, 0u);
  EXPECT_EQ(info.properties.kind, OAR_DEVICE_KIND_CPU);
}

TEST(Probe, MeasuresTheDeviceSpeed) {
  const TargetInfo info = probe(open_cpu, kShortTimeout);
  EXPECT_TRUE(info.speed.note.empty()) << info.speed.note;
  EXPECT_GT(info.speed.copy_round_trip_ms, 0);
  EXPECT_GT(info.speed.kernel_round_trip_ms, 0);
  EXPECT_LT(info.speed.unit_ms(), 1000) << "the cpu device is not that slow";
}

TEST(Probe, TimeoutGrowsWithTheMeasuredRoundTrip) {
  DeviceSpeed speed;
  EXPECT_EQ(test_timeout(milliseconds(5000), speed), milliseconds(5000));
  speed.copy_round_trip_ms = 650;
  speed.kernel_round_trip_ms = 1300;
  EXPECT_EQ(test_timeout(milliseconds(5000), speed),
            milliseconds(5000 + 1300 * kRoundTripsPerTest));
}

TEST(Probe, ReportsTheFactoryError) {
  auto no_devices = []() -> Target {
    throw TargetError(TargetError::Kind::kNoDevices, "plugin null has no devices");
  };
  try {
    probe(no_devices, kShortTimeout);
    FAIL() << "probe succeeded";
  } catch (const TargetError& e) {
    EXPECT_EQ(e.kind(), TargetError::Kind::kNoDevices);
    EXPECT_STREQ(e.what(), "plugin null has no devices");
  }
}

TEST(Probe, CrashWhileLoadingIsKindCrashed) {
  auto crashing = []() -> Target { std::abort(); };
  try {
    probe(crashing, kShortTimeout);
    FAIL() << "probe succeeded";
  } catch (const TargetError& e) {
    EXPECT_EQ(e.kind(), TargetError::Kind::kCrashed);
    EXPECT_NE(std::string(e.what()).find("SIGABRT"), std::string::npos);
  }
}

TEST(Counts, CleanOnlyWithoutFailuresCrashesOrTimeouts) {
  std::vector<TestResult> results(3);
  results[0].status = Status::kPassed;
  results[1].status = Status::kSkipped;
  results[2].status = Status::kKnownFailure;
  EXPECT_TRUE(count(results).clean());
  for (Status bad : {Status::kFailed, Status::kCrashed, Status::kTimeout}) {
    results[0].status = bad;
    EXPECT_FALSE(count(results).clean()) << status_name(bad);
  }
}

// A device that claims f16 and bf16 (not f64), and the results of a run in
// which every test of every schema pair passed, with the ABI and a model.
class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    properties_.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16;
    results_.push_back(passed("abi/streams/x", "abi", "", ""));
    results_.push_back(passed("models/mlp_relu/f32", "models", "", "f32"));
    results_.push_back(passed("models/train_mlp_sgd/f32", "models", "", "f32"));
    for (const OpDtype& pair : required_pairs(Profile::kFull, properties_)) {
      results_.push_back(
          passed("ops/" + pair.op + "/" + pair.dtype + "/a", "ops", pair.op, pair.dtype));
      results_.push_back(
          passed("ops/" + pair.op + "/" + pair.dtype + "/b", "ops", pair.op, pair.dtype));
    }
  }

  static TestResult passed(std::string id, std::string area, std::string op, std::string dtype) {
    TestResult result;
    result.id = std::move(id);
    result.area = std::move(area);
    result.op = std::move(op);
    result.dtype = std::move(dtype);
    result.status = Status::kPassed;
    return result;
  }

  // Marks every test of |op|/|dtype| unsupported, as the expectations would.
  void mark_unsupported(const std::string& op, const std::string& dtype) {
    for (TestResult& result : results_) {
      if (result.op != op || result.dtype != dtype) continue;
      result.status = Status::kSkipped;
      result.unsupported = true;
      result.message = "unsupported: no such unit";
    }
  }

  Judgement judge_best() const {
    return judge(results_, properties_, ProfileRequest::kBest, false);
  }

  oar_device_properties_t properties_{};
  std::vector<TestResult> results_;
};

TEST_F(ProfileTest, CoreOperatorsAreSchemaOperatorsAndAFractionOfThem) {
  const auto core = required_pairs(Profile::kCore, properties_);
  const auto full = required_pairs(Profile::kFull, properties_);
  EXPECT_GT(core.size(), 40u);
  EXPECT_LT(core.size(), full.size() / 2);
  for (const CoreOperator& entry : core_operators()) EXPECT_NE(ops::find_schema(entry.op), nullptr);
  // f64 is not claimed: no pair asks for it.
  for (const OpDtype& pair : full) EXPECT_NE(pair.dtype, "f64") << pair.op;
  EXPECT_NE(std::find(core.begin(), core.end(), OpDtype{"matmul", "bf16"}), core.end());
  EXPECT_NE(std::find(core.begin(), core.end(), OpDtype{"cast", "i64"}), core.end());
  EXPECT_EQ(std::find(core.begin(), core.end(), OpDtype{"where", "f32"}), core.end());
}

TEST_F(ProfileTest, EveryPairPassedCertifiesTheFullProfile) {
  const Judgement judgement = judge_best();
  EXPECT_EQ(judgement.verdict, Verdict::kCertified);
  ASSERT_TRUE(judgement.profile.has_value());
  EXPECT_EQ(*judgement.profile, Profile::kFull);
  EXPECT_TRUE(judgement.full.complete());
  EXPECT_EQ(judgement.full.operators, ops::schemas().size());
  EXPECT_NE(judgement.headline().find("CERTIFIED (full profile)"), std::string::npos)
      << judgement.headline();
}

TEST_F(ProfileTest, UnsupportedOperatorsOutsideTheCoreCertifyOnlyTheCore) {
  mark_unsupported("where", "f32");
  mark_unsupported("erf", "bf16");
  const Judgement judgement = judge_best();
  EXPECT_EQ(judgement.verdict, Verdict::kCertified);
  ASSERT_TRUE(judgement.profile.has_value());
  EXPECT_EQ(*judgement.profile, Profile::kCore);
  EXPECT_EQ(judgement.full.gaps.size(), 2u);
  EXPECT_EQ(judgement.full.operators_covered, judgement.full.operators - 2);
  EXPECT_NE(judgement.full.gaps[0].reason.find("unsupported"), std::string::npos);
  EXPECT_NE(judgement.headline().find("CERTIFIED (core profile)"), std::string::npos)
      << judgement.headline();
  // Asked for the full profile, the same run is refused.
  const Judgement full = judge(results_, properties_, ProfileRequest::kFull, false);
  EXPECT_EQ(full.verdict, Verdict::kNotCertified);
  EXPECT_FALSE(full.reasons.empty());
}

TEST_F(ProfileTest, OneUnsupportedCorePairIsNotCertified) {
  mark_unsupported("matmul", "f16");
  const Judgement judgement = judge_best();
  EXPECT_EQ(judgement.verdict, Verdict::kNotCertified);
  EXPECT_FALSE(judgement.profile.has_value());
  ASSERT_EQ(judgement.core.gaps.size(), 1u);
  EXPECT_EQ(judgement.core.gaps[0].op, "matmul");
  EXPECT_EQ(judgement.core.gaps[0].dtype, "f16");
  EXPECT_NE(judgement.headline().find("matmul f16"), std::string::npos) << judgement.headline();
}

TEST_F(ProfileTest, KnownFailureOrUnsupportedInTheAbiOrModelsDeniesEveryProfile) {
  results_[0].status = Status::kKnownFailure;
  EXPECT_EQ(judge_best().verdict, Verdict::kNotCertified);
  results_[0].status = Status::kPassed;
  results_[1].status = Status::kSkipped;
  results_[1].unsupported = true;
  EXPECT_EQ(judge_best().verdict, Verdict::kNotCertified);
  results_.erase(results_.begin() + 1);
  EXPECT_EQ(judge_best().verdict, Verdict::kNotCertified) << "no model ran";
}

// Training needs gradient and optimizer operators outside the core: a
// plugin without them is certified in the core profile, never the full one.
TEST_F(ProfileTest, TrainingLoopsAreNeededByTheFullProfileOnly) {
  for (TestResult& result : results_) {
    if (result.id.rfind("models/train_", 0) != 0) continue;
    result.status = Status::kSkipped;
    result.unsupported = true;
  }
  const Judgement judgement = judge_best();
  EXPECT_EQ(judgement.verdict, Verdict::kCertified) << judgement.headline();
  ASSERT_TRUE(judgement.profile.has_value());
  EXPECT_EQ(*judgement.profile, Profile::kCore);
  const Judgement full = judge(results_, properties_, ProfileRequest::kFull, false);
  EXPECT_EQ(full.verdict, Verdict::kNotCertified);
  EXPECT_NE(full.headline().find("training loops"), std::string::npos) << full.headline();
  // No training loop at all is no better.
  results_.erase(results_.begin() + 2);
  EXPECT_EQ(judge(results_, properties_, ProfileRequest::kFull, false).verdict,
            Verdict::kNotCertified);
}

// A run with the core's decompositions on certifies the primitives profile
// only: a plugin without a kernel is never certified under core or full.
TEST_F(ProfileTest, DecomposedRunCertifiesPrimitivesOnly) {
  const Judgement best = judge(results_, properties_, ProfileRequest::kBest, false, true);
  EXPECT_EQ(best.verdict, Verdict::kCertified) << best.headline();
  ASSERT_TRUE(best.profile.has_value());
  EXPECT_EQ(*best.profile, Profile::kPrimitives);
  EXPECT_NE(best.headline().find("primitives profile"), std::string::npos) << best.headline();
  EXPECT_NE(best.headline().find("every model"), std::string::npos) << best.headline();
  for (ProfileRequest request : {ProfileRequest::kCore, ProfileRequest::kFull}) {
    const Judgement kernels = judge(results_, properties_, request, false, true);
    EXPECT_EQ(kernels.verdict, Verdict::kNotCertified) << kernels.headline();
    EXPECT_NE(kernels.headline().find("decompose"), std::string::npos) << kernels.headline();
  }
  // Every pair of the full profile must run, and the training loops too.
  mark_unsupported("logsumexp", "f16");
  const Judgement gap = judge(results_, properties_, ProfileRequest::kPrimitives, false, true);
  EXPECT_EQ(gap.verdict, Verdict::kNotCertified);
  EXPECT_NE(gap.headline().find("primitives profile is not covered"), std::string::npos)
      << gap.headline();
  results_.erase(results_.begin() + 2);  // the training loop
  for (TestResult& r : results_) {
    if (r.op == "logsumexp") r.status = Status::kPassed, r.unsupported = false;
  }
  EXPECT_EQ(judge(results_, properties_, ProfileRequest::kPrimitives, false, true).verdict,
            Verdict::kNotCertified);
}

TEST_F(ProfileTest, FilteredRunIsPartialNeverCertified) {
  const Judgement clean = judge(results_, properties_, ProfileRequest::kBest, true);
  EXPECT_EQ(clean.verdict, Verdict::kPartial);
  EXPECT_FALSE(clean.profile.has_value());
  EXPECT_EQ(clean.headline().find("CERTIFIED"), std::string::npos) << clean.headline();
  results_.back().status = Status::kFailed;
  EXPECT_EQ(judge(results_, properties_, ProfileRequest::kBest, true).verdict,
            Verdict::kNotCertified);
}

TEST_F(ProfileTest, AFailedTestDeniesEveryProfile) {
  results_.back().status = Status::kTimeout;
  const Judgement judgement = judge_best();
  EXPECT_EQ(judgement.verdict, Verdict::kNotCertified);
  EXPECT_NE(judgement.reasons.front().find("1 test failed"), std::string::npos);
}

TEST_F(ProfileTest, CoreSelectionKeepsTheAbiTheModelsAndTheCorePairs) {
  std::vector<TestCase> tests;
  for (const TestResult& r : results_) tests.push_back({r.id, r.area, r.op, r.dtype, "", {}});
  const auto core = tests_of_profile(tests, Profile::kCore, properties_);
  EXPECT_EQ(core.size(), 2 + 2 * required_pairs(Profile::kCore, properties_).size());
  EXPECT_EQ(core[0].area, "abi");
  EXPECT_EQ(core[1].area, "models");
}

// Tags nest and close, attributes are quoted, '&' starts an entity, text has
// no raw '<'. Enough to catch an unescaped message.
bool well_formed_xml(const std::string& xml, std::string* error) {
  auto entity_ok = [&](size_t at) {
    for (const char* entity : {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"}) {
      if (xml.compare(at, std::strlen(entity), entity) == 0) return true;
    }
    return false;
  };
  std::vector<std::string> open;
  size_t i = xml.rfind("<?xml", 0) == 0 ? xml.find("?>") + 2 : 0;
  int roots = 0;
  while (i < xml.size()) {
    if (xml[i] == '&' && !entity_ok(i)) return *error = "bad entity at " + std::to_string(i), false;
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const bool closing = xml[i + 1] == '/';
    size_t name_end = xml.find_first_of(" />", i + 1 + closing);
    const std::string name = xml.substr(i + 1 + closing, name_end - i - 1 - closing);
    i = name_end;
    if (closing) {
      if (open.empty() || open.back() != name) return *error = "unbalanced </" + name + ">", false;
      open.pop_back();
      i = xml.find('>', i) + 1;
      continue;
    }
    if (open.empty()) ++roots;
    while (true) {
      while (xml[i] == ' ' || xml[i] == '\n') ++i;
      if (xml.compare(i, 2, "/>") == 0) {
        i += 2;
        break;
      }
      if (xml[i] == '>') {
        open.push_back(name);
        ++i;
        break;
      }
      const size_t equals = xml.find('=', i);
      if (equals == std::string::npos || xml[equals + 1] != '"') {
        return *error = "unquoted attribute in <" + name + ">", false;
      }
      const size_t close = xml.find('"', equals + 2);
      for (size_t k = equals + 2; k < close; ++k) {
        if (xml[k] == '<') return *error = "raw < in an attribute of <" + name + ">", false;
        if (xml[k] == '&' && !entity_ok(k)) return *error = "bad entity in <" + name + ">", false;
      }
      i = close + 1;
    }
  }
  if (!open.empty()) return *error = "<" + open.back() + "> not closed", false;
  if (roots != 1) return *error = "not exactly one root element", false;
  return true;
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    report_.target = probe(open_cpu, kShortTimeout);
    report_.library_sha256 = sha256_file_hex(report_.target.plugin.library_path);
    report_.results = synthetic_run().results;
    report_.judgement =
        judge(report_.results, report_.target.properties, ProfileRequest::kBest, false);
    report_.duration_ms = 1234;
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("oar-conform-report-" + std::to_string(::getpid()));
    write_report(report_, dir_.string());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string read(const char* name) const {
    std::ifstream file(dir_ / name);
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  }

  Report report_;
  std::filesystem::path dir_;
};

TEST_F(ReportTest, JsonParsesBackWithVerdictCountsAndEveryTest) {
  const json document = json::parse(read("report.json"));
  EXPECT_EQ(document["schema_version"], 2);
  EXPECT_EQ(document["suite_version"], kSuiteVersion);
  EXPECT_EQ(document["verdict"], "not_certified");
  EXPECT_TRUE(document["profile"].is_null());
  EXPECT_EQ(document["partial"], false);
  EXPECT_GT(document["coverage"]["full"]["pairs"], document["coverage"]["core"]["pairs"]);
  EXPECT_FALSE(document["coverage"]["core"]["complete"]);
  EXPECT_FALSE(document["reasons"].empty());
  EXPECT_EQ(document["plugin"]["name"], "cpu");
  EXPECT_EQ(document["plugin"]["library_sha256"].get<std::string>().size(), 64u);
  EXPECT_EQ(document["device"]["name"], "cpu:0");
  EXPECT_EQ(document["device"]["properties"]["kind"], "cpu");
  for (const char* key : {"hostname", "os", "cpu", "time"})
    EXPECT_TRUE(document["host"].contains(key));
  EXPECT_EQ(document["counts"]["crashed"], 2);
  EXPECT_EQ(document["counts"]["timeout"], 1);
  EXPECT_EQ(document["counts"]["known_failure"], 2);
  EXPECT_EQ(document["counts"]["total"], report_.results.size());
  ASSERT_EQ(document["tests"].size(), report_.results.size());
  const json& first = document["tests"][0];
  for (const char* key : {"id", "area", "op", "dtype", "status", "message", "duration_ms"}) {
    EXPECT_TRUE(first.contains(key)) << key;
  }
}

TEST_F(ReportTest, JunitXmlIsWellFormedAndCountsEveryTest) {
  const std::string xml = read("junit.xml");
  std::string error;
  EXPECT_TRUE(well_formed_xml(xml, &error)) << error;
  size_t testcases = 0;
  for (size_t at = xml.find("<testcase "); at != std::string::npos;
       at = xml.find("<testcase ", at + 1)) {
    ++testcases;
  }
  EXPECT_EQ(testcases, report_.results.size());
  EXPECT_NE(xml.find("tests=\"" + std::to_string(report_.results.size()) + "\""),
            std::string::npos);
  EXPECT_NE(xml.find("expected &lt;1&gt; &amp; &quot;2&quot;"), std::string::npos);
  EXPECT_NE(xml.find("<error type=\"crashed\""), std::string::npos);
  EXPECT_NE(xml.find("<error type=\"timeout\""), std::string::npos);
  EXPECT_NE(xml.find("<skipped message=\"needs f64\"/>"), std::string::npos);
  EXPECT_NE(xml.find("<property name=\"verdict\" value=\"not_certified\"/>"), std::string::npos);
}

TEST_F(ReportTest, HtmlIsSelfContainedEscapedAndShowsTheVerdict) {
  const std::string html = read("report.html");
  EXPECT_NE(html.find("NOT CERTIFIED"), std::string::npos);
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("expected <1>"), std::string::npos);
  EXPECT_NE(html.find("expected &lt;1&gt;"), std::string::npos);
  EXPECT_NE(html.find("class=\"matrix\""), std::string::npos);
  // add/f16 failed: its cell is red.
  EXPECT_NE(html.find("class=\"s-failed\" title=\"add f16"), std::string::npos);
  for (const auto& r : report_.results) EXPECT_NE(html.find(r.id), std::string::npos) << r.id;
}

// A bundle of the synthetic run, signed with a fresh key; each test alters a
// copy and checks that verify_bundle names what was altered.
class BundleTest : public ReportTest {
 protected:
  void SetUp() override {
    ReportTest::SetUp();
    std::ofstream(dir_ / "test-output.log") << "what the test processes printed\n";
    key_ = (dir_ / "key.pem").string();
    generate_signing_key(key_, (dir_ / "key.pub.pem").string());
    bundle_ = (dir_ / "bundle.tar.gz").string();
    write_bundle(report_, dir_.string(), bundle_, key_);
  }

  std::string public_key(const char* name = "key.pub.pem") const { return read(name); }

  // The members of |path| in order.
  static std::vector<std::pair<std::string, std::string>> unpack(const std::string& path) {
    std::vector<std::pair<std::string, std::string>> members;
    archive* reader = archive_read_new();
    archive_read_support_filter_all(reader);
    archive_read_support_format_tar(reader);
    EXPECT_EQ(archive_read_open_filename(reader, path.c_str(), 1 << 16), ARCHIVE_OK);
    archive_entry* entry = nullptr;
    while (archive_read_next_header(reader, &entry) == ARCHIVE_OK) {
      std::string data(size_t(archive_entry_size(entry)), '\0');
      archive_read_data(reader, data.data(), data.size());
      members.push_back({archive_entry_pathname(entry), data});
    }
    archive_read_free(reader);
    return members;
  }

  // Writes |members| as a tar.gz to a new file and returns its path.
  std::string repack(const std::vector<std::pair<std::string, std::string>>& members) const {
    const std::string path = (dir_ / "altered.tar.gz").string();
    archive* writer = archive_write_new();
    archive_write_add_filter_gzip(writer);
    archive_write_set_format_pax_restricted(writer);
    archive_write_open_filename(writer, path.c_str());
    for (const auto& [name, data] : members) {
      archive_entry* entry = archive_entry_new();
      archive_entry_set_pathname(entry, name.c_str());
      archive_entry_set_filetype(entry, AE_IFREG);
      archive_entry_set_perm(entry, 0644);
      archive_entry_set_size(entry, la_int64_t(data.size()));
      archive_write_header(writer, entry);
      archive_write_data(writer, data.data(), data.size());
      archive_entry_free(entry);
    }
    archive_write_close(writer);
    archive_write_free(writer);
    return path;
  }

  // The bundle with member |name| changed by |alter|.
  std::string altered(const std::string& name, const std::function<void(std::string&)>& alter) {
    auto members = unpack(bundle_);
    bool found = false;
    for (auto& [member, data] : members) {
      if (member == name) {
        alter(data);
        found = true;
      }
    }
    EXPECT_TRUE(found) << name;
    return repack(members);
  }

  static std::string problems(const BundleCheck& check) {
    std::string text;
    for (const auto& problem : check.problems) text += problem + "\n";
    return text;
  }

  std::string key_;
  std::string bundle_;
};

TEST_F(BundleTest, HoldsTheReportsTheCertificateTheKeyAndASignedManifest) {
  std::map<std::string, std::string> members;
  for (auto& [name, data] : unpack(bundle_)) members[name] = data;
  for (const char* name : {"report.json", "junit.xml", "report.html", "test-output.log",
                           "certificate.json", "signer.pub", "MANIFEST", "MANIFEST.sig"}) {
    EXPECT_TRUE(members.count(name)) << name;
  }
  const json certificate = json::parse(members["certificate.json"]);
  EXPECT_EQ(certificate["suite_version"], kSuiteVersion);
  EXPECT_EQ(certificate["plugin"]["library_sha256"], report_.library_sha256);
  EXPECT_EQ(certificate["device"]["properties"]["kind"], "cpu");
  EXPECT_TRUE(certificate["host"].contains("os"));
  EXPECT_EQ(certificate["verdict"], "not_certified");
  // sha256sum's format, one line per member but the manifest and signature.
  EXPECT_NE(members["MANIFEST"].find(sha256_hex(members["report.json"]) + "  report.json\n"),
            std::string::npos);
  EXPECT_EQ(std::count(members["MANIFEST"].begin(), members["MANIFEST"].end(), '\n'), 6);
}

TEST_F(BundleTest, AnIntactBundleVerifiesWithItsKeyAndItsLibrary) {
  const BundleCheck check =
      verify_bundle(bundle_, public_key(), report_.target.plugin.library_path);
  EXPECT_TRUE(check.ok()) << problems(check);
  EXPECT_TRUE(check.trusted_key);
  EXPECT_EQ(check.signer_fingerprint, public_key_fingerprint(public_key()));
  EXPECT_NE(check.summary.find("cpu"), std::string::npos) << check.summary;
  // The manifest leads to the same library.
  EXPECT_TRUE(verify_bundle(bundle_, std::nullopt, report_.target.plugin.manifest_path).ok());
}

TEST_F(BundleTest, AnAlteredMemberIsNamed) {
  for (const char* name : {"report.json", "certificate.json", "report.html", "test-output.log"}) {
    const BundleCheck check =
        verify_bundle(altered(name, [](std::string& data) { data += " "; }), public_key(), {});
    EXPECT_FALSE(check.ok()) << name;
    EXPECT_NE(problems(check).find(std::string("member ") + name + " was altered"),
              std::string::npos)
        << problems(check);
  }
}

TEST_F(BundleTest, AnAlteredManifestOrSignatureFailsTheSignature) {
  // The forger updates the manifest to match a changed report.
  auto members = unpack(bundle_);
  for (auto& [name, data] : members) {
    if (name == "report.json") data.replace(data.find("not_certified"), 13, "certified");
  }
  std::string report_sum;
  for (auto& [name, data] : members) {
    if (name == "report.json") report_sum = sha256_hex(data);
  }
  for (auto& [name, data] : members) {
    if (name != "MANIFEST") continue;
    const size_t line = data.find("  report.json\n");
    data.replace(line - 64, 64, report_sum);
  }
  const BundleCheck manifest = verify_bundle(repack(members), public_key(), {});
  EXPECT_NE(problems(manifest).find("signature does not match MANIFEST"), std::string::npos)
      << problems(manifest);
  EXPECT_EQ(problems(manifest).find("report.json was altered"), std::string::npos)
      << problems(manifest);

  const BundleCheck signature = verify_bundle(
      altered("MANIFEST.sig", [](std::string& data) { data[3] = data[3] == 'A' ? 'B' : 'A'; }),
      public_key(), {});
  EXPECT_NE(problems(signature).find("signature does not match MANIFEST"), std::string::npos)
      << problems(signature);
}

TEST_F(BundleTest, AMemberAddedOrRemovedAfterSigningIsNamed) {
  auto members = unpack(bundle_);
  members.push_back({"extra.txt", "added later"});
  const BundleCheck added = verify_bundle(repack(members), public_key(), {});
  EXPECT_NE(problems(added).find("extra.txt is not in MANIFEST"), std::string::npos)
      << problems(added);
  members.pop_back();
  members.erase(std::remove_if(members.begin(), members.end(),
                               [](const auto& member) { return member.first == "junit.xml"; }),
                members.end());
  const BundleCheck removed = verify_bundle(repack(members), public_key(), {});
  EXPECT_NE(problems(removed).find("junit.xml is listed in MANIFEST but missing"),
            std::string::npos)
      << problems(removed);
}

TEST_F(BundleTest, AnotherKeyOrAnotherLibraryFails) {
  generate_signing_key((dir_ / "other.pem").string(), (dir_ / "other.pub.pem").string());
  const BundleCheck other_key = verify_bundle(bundle_, public_key("other.pub.pem"), {});
  EXPECT_NE(problems(other_key).find("not the trusted key"), std::string::npos)
      << problems(other_key);
  EXPECT_NE(problems(other_key).find("signature does not match"), std::string::npos)
      << problems(other_key);

  const std::string other_library = (dir_ / "liboar_plugin_cpu.so").string();
  std::ofstream(other_library) << "a rebuilt library";
  const BundleCheck other = verify_bundle(bundle_, public_key(), other_library);
  EXPECT_NE(problems(other).find("is not the one certified"), std::string::npos) << problems(other);
}

TEST_F(BundleTest, ABundleRewrittenWithAnotherKeyFailsOnlyAgainstTheTrustedKey) {
  // Everything re-signed by a forger who puts their own key inside.
  const std::string forged = (dir_ / "forged.tar.gz").string();
  generate_signing_key((dir_ / "forger.pem").string(), (dir_ / "forger.pub.pem").string());
  write_bundle(report_, dir_.string(), forged, (dir_ / "forger.pem").string());
  EXPECT_TRUE(verify_bundle(forged, std::nullopt, {}).ok()) << "intact, by its own key";
  EXPECT_FALSE(verify_bundle(forged, public_key(), {}).ok()) << "not by the trusted key";
}

TEST_F(BundleTest, KeyFilesAreNeverOverwrittenAndThePrivateOneIsPrivate) {
  EXPECT_THROW(generate_signing_key(key_, (dir_ / "again.pub.pem").string()), std::runtime_error);
  EXPECT_EQ(std::filesystem::status(key_).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_THROW(SigningKey((dir_ / "key.pub.pem").string()), std::runtime_error);
}

TEST(XmlEscape, ReplacesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(xml_escape(std::string("x\x01y")), "x\xEF\xBF\xBDy");
  EXPECT_EQ(xml_escape(std::string("\xff")), "\xEF\xBF\xBD");
  EXPECT_EQ(xml_escape("tab\tnewline\n\xC3\xA9"), "tab\tnewline\n\xC3\xA9");
}

TEST(Sha256, MatchesTheFipsTestVectorsAndHashesFiles) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  const std::string path = std::filesystem::path(::testing::TempDir()) /
                           ("sha256-" + std::to_string(::getpid()) + ".txt");
  std::ofstream(path) << std::string(200000, 'x');
  EXPECT_EQ(sha256_file_hex(path), sha256_hex(std::string(200000, 'x')));
  std::filesystem::remove(path);
  EXPECT_THROW(sha256_file_hex(path), std::runtime_error);
}

class ExpectationsFileTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    path_ = std::filesystem::path(::testing::TempDir()) /
            ("expectations-" + std::to_string(::getpid()) + ".json");
    std::ofstream(path_) << text;
    return path_.string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::filesystem::path path_;
};

TEST_F(ExpectationsFileTest, ParsesBothListsAndMatchesGlobs) {
  const Expectations e =
      load_expectations(write(R"({"unsupported": [{"tests": "ops/conv2d/*", "reason": "no conv"}],
               "known_failures": [{"tests": "ops/erf/f16/*", "reason": "issue 12"}]})"));
  ASSERT_NE(e.find_unsupported("ops/conv2d/f32/basic"), nullptr);
  EXPECT_EQ(e.find_unsupported("ops/conv2d/f32/basic")->reason, "no conv");
  EXPECT_EQ(e.find_unsupported("ops/add/f32"), nullptr);
  ASSERT_NE(e.find_known_failure("ops/erf/f16/large"), nullptr);
  EXPECT_EQ(e.path, path_.string());
}

TEST_F(ExpectationsFileTest, RefusesUnknownKeysAndEntriesWithoutReason) {
  EXPECT_THROW(load_expectations(write(R"({"known_failure": []})")), std::runtime_error);
  EXPECT_THROW(load_expectations(write(R"({"unsupported": [{"tests": "a/*"}]})")),
               std::runtime_error);
  EXPECT_THROW(load_expectations(write("{not json")), std::runtime_error);
}

TEST(ExpectationsFiles, ThoseOfThePluginsInThisTreeAreValid) {
  for (const char* name : {"cpu", "null"}) {
    const auto path = find_expectations(name, "");
    ASSERT_TRUE(path.has_value()) << name;
    EXPECT_NO_THROW(load_expectations(*path)) << *path;
  }
}

}  // namespace
}  // namespace oar::conformance
