// The loader against plugins and manifests that are each wrong in one way: the
// runtime skips every one with a status and a reason that names the cause,
// never crashes, and the real cpu plugin loaded beside it keeps working. Also
// how the environment (OAR_PLUGIN_PATH, OAR_PLUGINS, OAR_DEVICES) and library
// paths given directly are honoured.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "loader_test_util.h"
#include "oar/oar.hpp"
#include "test_plugin.h"

namespace oar::loader_test {
namespace {

using ::testing::HasSubstr;

// How a defect reaches the runtime.
enum class Source {
  kBuilt,    // |input| is a library or manifest built with the tests
  kWritten,  // |input| is the text of a manifest the test writes
  kAbsent,   // a manifest path where there is no file
};

// One thing wrong, and what the loader must say about it.
struct Defect {
  std::string fact;  // the test's name
  Source source;
  std::string input;
  oar_status_t code;
  std::vector<std::string> words;  // each must appear in the reason
};

void PrintTo(const Defect& defect, std::ostream* out) { *out << defect.fact; }

// The path the runtime is given for |defect|, writing its manifest first.
std::string place(const ScratchDir& scratch, const Defect& defect) {
  switch (defect.source) {
    case Source::kBuilt:
      return defect.input;
    case Source::kWritten:
      return scratch.write(defect.fact + ".json", defect.input);
    case Source::kAbsent:
      return (scratch.path() / (defect.fact + ".json")).string();
  }
  return {};
}

const std::vector<Defect>& defects() {
  static const std::vector<Defect> all = {
      // Libraries.
      {"MissingEntrySymbolIsReported",
       Source::kBuilt,
       built_plugin("c_no_entry"),
       OAR_STATUS_NOT_FOUND,
       {"no entry symbol", "'oar_plugin_query'", "liboar_plugin_c_no_entry.so"}},
      {"UndefinedSymbolIsReportedByName",
       Source::kBuilt,
       built_manifest("c_undefined_symbol"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"undefined symbol", "oar_test_symbol_that_nobody_defines"}},
      {"AbiMajorMismatchIsReported",
       Source::kBuilt,
       built_manifest("c_abi_99"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"ABI major mismatch", "ABI 99.", "this OAR speaks " + std::to_string(OAR_ABI_MAJOR)}},
      {"TableSmallerThanAbi10IsReported",
       Source::kBuilt,
       built_manifest("c_short_table"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"struct_size " + std::to_string(OAR_PLUGIN_API_HEADER_SIZE + 8), "smaller than ABI 1.0"}},
      {"TableSmallerThanItsHeaderIsReported",
       Source::kBuilt,
       built_manifest("c_tiny_table"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"struct_size 4 ", "table header"}},
      {"MissingRequiredSlotIsNamed",
       Source::kBuilt,
       built_manifest("c_missing_slot"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"required slot", "missing: stream_create ("}},
      {"InitializeFailureCarriesThePluginsMessage",
       Source::kBuilt,
       built_manifest("c_init_fails"),
       OAR_STATUS_UNAVAILABLE,
       {"initialize failed", "UNAVAILABLE", OAR_TEST_INIT_MESSAGE}},
      {"QueryReturningNullIsReported",
       Source::kBuilt,
       built_manifest("c_query_null"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"oar_plugin_query returned no table"}},
      {"TextFileIsNotASharedLibrary",
       Source::kBuilt,
       built_plugin("garbage"),
       OAR_STATUS_INVALID_ARGUMENT,
       {"not a shared library", "liboar_plugin_garbage.so"}},
      {"ManifestAndLibraryNameMismatchIsReported",
       Source::kBuilt,
       built_manifest("c_name_mismatch"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"'c_name_mismatch'", "'someone_else'", "make them agree"}},
      {"SecondPluginOfTheSameNameIsIgnored",
       Source::kWritten,
       manifest_text(plugin_fields("cpu", kCpuLibrary)),
       OAR_STATUS_ALREADY_EXISTS,
       {"'cpu' is already loaded"}},
      {"SameLibraryGivenDirectlyIsIgnoredAsDuplicate",
       Source::kBuilt,
       kCpuLibrary,
       OAR_STATUS_ALREADY_EXISTS,
       {"'cpu' is already loaded"}},
      // Manifests.
      {"EmptyManifestIsReported",
       Source::kWritten,
       "\n",
       OAR_STATUS_INVALID_ARGUMENT,
       {"bad manifest", "empty"}},
      {"TruncatedManifestIsNotValidJson",
       Source::kWritten,
       manifest_text(plugin_fields("cpu", kCpuLibrary)).substr(0, 40),
       OAR_STATUS_INVALID_ARGUMENT,
       {"bad manifest", "not valid JSON"}},
      {"NumericNameIsReportedAsNotAString",
       Source::kWritten,
       manifest_text(R"("name": 5, "library_path": "x.so", "abi_version": "1.0")"),
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin.name\" must be a string", "number"}},
      {"PluginArrayIsReportedAsNotAnObject",
       Source::kWritten,
       R"({"file_format_version": "1.0.0", "plugin": []})",
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin\" must be an object", "array"}},
      {"MissingLibraryFileIsReported",
       Source::kWritten,
       manifest_text(plugin_fields("ghost", "nowhere/liboar_plugin_ghost.so")),
       OAR_STATUS_NOT_FOUND,
       {"library file missing", "nowhere/liboar_plugin_ghost.so"}},
      {"UnknownFileFormatMajorIsReported",
       Source::kWritten,
       manifest_text(plugin_fields("future", kCpuLibrary), "2.0.0"),
       OAR_STATUS_FAILED_PRECONDITION,
       {"file_format_version 2.0.0", "1.x manifests"}},
      {"ManifestAbiMajorMismatchIsReported",
       Source::kWritten,
       manifest_text(plugin_fields("future", kCpuLibrary, "2.0")),
       OAR_STATUS_FAILED_PRECONDITION,
       {"declares ABI 2.0", "ABI 1.x"}},
      {"MalformedAbiVersionIsReported",
       Source::kWritten,
       manifest_text(plugin_fields("odd", kCpuLibrary, "one")),
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin.abi_version\" must look like \"1.0\"", "\"one\""}},
      {"MissingLibraryPathFieldIsReported",
       Source::kWritten,
       manifest_text(R"("name": "nolib", "abi_version": "1.0")"),
       OAR_STATUS_INVALID_ARGUMENT,
       {"missing \"plugin.library_path\""}},
      {"MissingFileFormatVersionIsReported",
       Source::kWritten,
       R"({"plugin": {)" + plugin_fields("noformat", kCpuLibrary) + "}}",
       OAR_STATUS_INVALID_ARGUMENT,
       {"missing \"file_format_version\""}},
      {"AbsentManifestFileIsReported",
       Source::kAbsent,
       "",
       OAR_STATUS_NOT_FOUND,
       {"cannot read manifest", "no such file"}},
      // Found by fuzzing (issue 12): the parser's out_of_range escaped and aborted.
      {"NumberBeyondADoubleIsABadManifest",
       Source::kWritten,
       R"({"file_format_version": "1.0.0", "x": 1e999, "plugin": {)" +
           plugin_fields("cpu", kCpuLibrary) + "}}",
       OAR_STATUS_INVALID_ARGUMENT,
       {"bad manifest", "number overflow", "1e999"}},
      {"RepeatedKeyIsRefusedNotGuessed",
       Source::kWritten,
       manifest_text(plugin_fields("cpu", kCpuLibrary) + R"(, "library_path": "/other.so")"),
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin.library_path\" appears twice"}},
      {"NameLongerThan128BytesIsRefused",
       Source::kWritten,
       manifest_text(plugin_fields(std::string(100000, 'n'), kCpuLibrary)),
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin.name\" is 100000 bytes long", "at most 128"}},
      {"NameWithControlCharactersIsRefused",
       Source::kWritten,
       manifest_text(plugin_fields(R"(cpu\u001b[2J)", kCpuLibrary)),
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin.name\" \"cpu\\x1B[2J\"", "control characters"}},
      // A C string ends at the NUL: dlopen would open "<cpu library>", not the path checked.
      {"LibraryPathWithANulIsRefused",
       Source::kWritten,
       manifest_text(plugin_fields("cpu", kCpuLibrary + R"(\u0000.evil)")),
       OAR_STATUS_INVALID_ARGUMENT,
       {"\"plugin.library_path\" contains a NUL character"}},
  };
  return all;
}

void expect_diagnosed(const PluginRecord* record, const Defect& defect) {
  ASSERT_NE(record, nullptr) << "no record for " << defect.fact;
  EXPECT_EQ(record->state, PluginState::kSkipped) << defect.fact;
  EXPECT_EQ(record->code, defect.code)
      << defect.fact << ": " << status_name(record->code) << " instead of "
      << status_name(defect.code) << "; reason: " << record->reason;
  for (const std::string& word : defect.words) {
    EXPECT_THAT(record->reason, HasSubstr(word)) << defect.fact;
  }
}

class BrokenPlugin : public ::testing::TestWithParam<Defect> {
 protected:
  ScratchDir scratch_;
};

TEST_P(BrokenPlugin, IsSkippedWithItsDiagnosticWhileCpuWorks) {
  const Defect& defect = GetParam();
  std::string path = place(scratch_, defect);
  Runtime runtime(only({kCpuManifest, path}));

  ASSERT_EQ(runtime.plugins().size(), 2u);
  expect_diagnosed(record_for(runtime, path), defect);
  expect_cpu_works(runtime);
}

INSTANTIATE_TEST_SUITE_P(Loader, BrokenPlugin, ::testing::ValuesIn(defects()),
                         [](const ::testing::TestParamInfo<Defect>& info) {
                           return info.param.fact;
                         });

TEST(Loader, EveryBrokenPluginAtOnceGetsItsOwnDiagnosticWhileCpuWorks) {
  ScratchDir scratch;
  std::vector<std::string> files = {kCpuManifest};
  for (const Defect& defect : defects()) files.push_back(place(scratch, defect));
  Runtime runtime(only(files));

  ASSERT_EQ(runtime.plugins().size(), files.size());
  std::set<std::string> reasons;
  for (size_t i = 0; i < defects().size(); ++i) {
    const PluginRecord* record = record_for(runtime, files[i + 1]);
    expect_diagnosed(record, defects()[i]);
    if (record != nullptr) reasons.insert(record->reason);
  }
  EXPECT_EQ(reasons.size(), defects().size()) << "two defects share a diagnostic";
  expect_cpu_works(runtime);
}

TEST(Loader, PureCPluginLoadsWithZeroDevices) {
  std::string path = built_manifest("c_good");
  Runtime runtime(only({path, kCpuManifest}));

  const PluginRecord* record = record_for(runtime, path);
  ASSERT_NE(record, nullptr);
  ASSERT_EQ(record->state, PluginState::kLoaded) << record->reason;
  EXPECT_EQ(record->name, "c_good");
  EXPECT_EQ(record->version, "0.0.1");
  EXPECT_EQ(record->vendor, "OAR loader tests");
  EXPECT_EQ(record->abi_major, uint32_t{OAR_ABI_MAJOR});
  EXPECT_EQ(record->abi_minor, uint32_t{OAR_ABI_MINOR});
  EXPECT_EQ(record->device_count, 0);
  EXPECT_EQ(runtime.find_device("c_good"), nullptr);
  expect_cpu_works(runtime);
}

// A plugin's version and vendor are free text of any length; what the runtime
// keeps of them is short and printable.
TEST(Loader, HugeVersionAndVendorStringsAreClipped) {
  Runtime runtime(only({built_manifest("c_huge_strings")}));

  ASSERT_EQ(runtime.plugins().size(), 1u);
  const PluginRecord& record = runtime.plugins()[0];
  ASSERT_EQ(record.state, PluginState::kLoaded) << record.reason;
  EXPECT_LT(record.version.size(), 300u);
  EXPECT_THAT(record.version, HasSubstr("vvvv\xE2\x80\xA6("));
  EXPECT_LT(record.vendor.size(), 300u);
}

TEST(Loader, LibraryGivenDirectlyLoadsUnderItsTableName) {
  Runtime runtime(only({kCpuLibrary}));

  ASSERT_EQ(runtime.plugins().size(), 1u);
  EXPECT_TRUE(runtime.plugins()[0].manifest_path.empty());
  expect_cpu_works(runtime, kCpuLibrary);
}

TEST(Loader, PluginFilesReplaceTheSearchOfPluginPaths) {
  RuntimeOptions options = only({built_manifest("c_good")});
  options.plugin_paths = {fs::path(kCpuManifest).parent_path().string()};
  Runtime runtime(options);

  ASSERT_EQ(runtime.plugins().size(), 1u);
  EXPECT_EQ(runtime.plugins()[0].name, "c_good");
}

TEST(Environment, OarPluginPathFoldersAreSearched) {
  ScopedEnvironment environment;
  ScratchDir scratch;
  std::string manifest =
      scratch.write("cpu.json", manifest_text(plugin_fields("cpu", kCpuLibrary)));
  environment.set("OAR_PLUGIN_PATH", "/nonexistent/oar/plugins.d:" + scratch.path().string());
  Runtime runtime(with_environment({}));

  ASSERT_EQ(runtime.plugins().size(), 1u);
  expect_cpu_works(runtime, manifest);
}

TEST(Environment, OarPluginsReplacesTheSearchAndPluginFiles) {
  ScopedEnvironment environment;
  ScratchDir scratch;
  scratch.write("cpu.json", manifest_text(plugin_fields("cpu", kCpuLibrary)));
  environment.set("OAR_PLUGIN_PATH", scratch.path().string());
  environment.set("OAR_PLUGINS", built_manifest("c_good") + ":" + kCpuManifest);
  Runtime runtime(with_environment({kCpuLibrary}));

  ASSERT_EQ(runtime.plugins().size(), 2u);
  EXPECT_EQ(runtime.plugins()[0].name, "c_good");
  EXPECT_EQ(runtime.plugins()[0].state, PluginState::kLoaded) << runtime.plugins()[0].reason;
  expect_cpu_works(runtime, kCpuManifest);
}

TEST(Environment, IsIgnoredWhenUseEnvironmentIsFalse) {
  ScopedEnvironment environment;
  environment.set("OAR_PLUGINS", built_manifest("c_good"));
  environment.set("OAR_DEVICES", "c_good");
  Runtime runtime(only({kCpuManifest}));

  ASSERT_EQ(runtime.plugins().size(), 1u);
  expect_cpu_works(runtime);
}

TEST(Environment, OarDevicesHidesDevicesItDoesNotName) {
  ScopedEnvironment environment;
  environment.set("OAR_DEVICES", "c_good,cpu:7");
  Runtime runtime(with_environment({kCpuManifest, built_manifest("c_good")}));

  const PluginRecord* cpu = record_for(runtime, kCpuManifest);
  ASSERT_NE(cpu, nullptr);
  EXPECT_EQ(cpu->state, PluginState::kLoaded) << cpu->reason;
  EXPECT_TRUE(runtime.devices().empty());
  EXPECT_EQ(runtime.find_device("cpu:0"), nullptr);
  try {
    runtime.device("cpu:0");
    ADD_FAILURE() << "device(\"cpu:0\") did not throw";
  } catch (const Error& error) {
    EXPECT_EQ(error.code(), OAR_STATUS_NOT_FOUND);
  }
}

TEST(Environment, OarDevicesAdmitsTheDevicesItNames) {
  ScopedEnvironment environment;
  environment.set("OAR_DEVICES", "c_good,cpu:0");
  Runtime runtime(with_environment({kCpuManifest, built_manifest("c_good")}));

  ASSERT_EQ(runtime.devices().size(), 1u);
  EXPECT_EQ(runtime.devices()[0]->name(), "cpu:0");
  expect_cpu_works(runtime);
}

TEST(Environment, OarDevicesOverridesTheDeviceFilterOption) {
  ScopedEnvironment environment;
  environment.set("OAR_DEVICES", "cpu");
  RuntimeOptions options = with_environment({kCpuManifest});
  options.device_filter = "none_such";
  Runtime runtime(options);

  expect_cpu_works(runtime);
}

TEST(Loader, DeviceFilterOptionHidesDevicesItDoesNotName) {
  RuntimeOptions options = only({kCpuManifest});
  options.device_filter = "none_such";
  Runtime runtime(options);

  EXPECT_TRUE(runtime.devices().empty());
}

}  // namespace
}  // namespace oar::loader_test
