// Tests of the runner, expectations and reports with a synthetic registry:
// every way a test can end (pass, fail, skip, oar::Error, segfault, abort,
// hang, known failure, unsupported) and that the run goes on after each.
#include <gtest/gtest.h>
#include <unistd.h>

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

#include "conformance/harness/expectations.h"
#include "conformance/harness/report.h"
#include "conformance/harness/runner.h"
#include "conformance/harness/sha256.h"

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

TEST(Runner, HangIsTimeoutAfterTheGroupTimeout) {
  const TestResult& hang = result("hang/sleep");
  EXPECT_EQ(hang.status, Status::kTimeout);
  EXPECT_NE(hang.message.find("timeout"), std::string::npos);
  EXPECT_LT(hang.duration_ms, 30000);
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

TEST(Counts, CertifiedOnlyWithoutFailuresCrashesOrTimeouts) {
  std::vector<TestResult> results(3);
  results[0].status = Status::kPassed;
  results[1].status = Status::kSkipped;
  results[2].status = Status::kKnownFailure;
  EXPECT_TRUE(count(results).certified());
  for (Status bad : {Status::kFailed, Status::kCrashed, Status::kTimeout}) {
    results[0].status = bad;
    EXPECT_FALSE(count(results).certified()) << status_name(bad);
  }
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
  EXPECT_EQ(document["schema_version"], 1);
  EXPECT_EQ(document["suite_version"], kSuiteVersion);
  EXPECT_EQ(document["verdict"], "not_certified");
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

TEST(XmlEscape, ReplacesControlCharactersAndInvalidUtf8) {
  EXPECT_EQ(xml_escape("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&apos;");
  EXPECT_EQ(xml_escape(std::string("x\x01y")), "x\xEF\xBF\xBDy");
  EXPECT_EQ(xml_escape(std::string("\xff")), "\xEF\xBF\xBD");
  EXPECT_EQ(xml_escape("tab\tnewline\n\xC3\xA9"), "tab\tnewline\n\xC3\xA9");
}

TEST(Sha256, MatchesTheFipsTestVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
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
