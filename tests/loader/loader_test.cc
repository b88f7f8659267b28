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

#include "oar/oar.hpp"
#include "test_plugin.h"

namespace oar {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kPluginDir = OAR_LOADER_TEST_PLUGIN_DIR;
const std::string kManifestDir = OAR_LOADER_TEST_MANIFEST_DIR;
const std::string kCpuManifest = OAR_TEST_CPU_MANIFEST;
const std::string kCpuLibrary = OAR_TEST_CPU_LIBRARY;

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

std::string built_plugin(const std::string& name) {
  return kPluginDir + "/liboar_plugin_" + name + ".so";
}
std::string built_manifest(const std::string& name) { return kManifestDir + "/" + name + ".json"; }

// A manifest with |plugin_fields| inside "plugin" and |format| as its
// file_format_version.
std::string manifest_text(const std::string& plugin_fields, const std::string& format = "1.0.0") {
  return R"({"file_format_version": ")" + format + R"(", "plugin": {)" + plugin_fields + "}}";
}
std::string plugin_fields(const std::string& name, const std::string& library,
                          const std::string& abi = "1.0") {
  return R"("name": ")" + name + R"(", "library_path": ")" + library + R"(", "abi_version": ")" +
         abi + R"(")";
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
       {"cannot read manifest"}},
  };
  return all;
}

// A fresh folder under the system's temporary folder, removed afterwards.
class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "oar_loader_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << pattern;
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  const fs::path& path() const { return path_; }

  std::string write(const std::string& file, const std::string& text) const {
    std::string path = (path_ / file).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  // The path the runtime is given for |defect|, writing its manifest first.
  std::string place(const Defect& defect) const {
    switch (defect.source) {
      case Source::kBuilt:
        return defect.input;
      case Source::kWritten:
        return write(defect.fact + ".json", defect.input);
      case Source::kAbsent:
        return (path_ / (defect.fact + ".json")).string();
    }
    return {};
  }

 private:
  fs::path path_;
};

// Sets the variables the runtime reads for the duration of a test; the ones a
// test does not set are unset, and all are restored afterwards.
class ScopedEnvironment {
 public:
  ScopedEnvironment() {
    for (const char* name : kNames) {
      const char* value = getenv(name);
      saved_.emplace_back(value != nullptr ? std::optional<std::string>(value) : std::nullopt);
      unsetenv(name);
    }
  }
  ~ScopedEnvironment() {
    for (size_t i = 0; i < kNames.size(); ++i) {
      if (saved_[i]) {
        setenv(kNames[i], saved_[i]->c_str(), 1);
      } else {
        unsetenv(kNames[i]);
      }
    }
  }
  void set(const char* name, const std::string& value) { setenv(name, value.c_str(), 1); }

 private:
  static constexpr std::array<const char*, 3> kNames = {"OAR_PLUGIN_PATH", "OAR_PLUGINS",
                                                        "OAR_DEVICES"};
  std::vector<std::optional<std::string>> saved_;
};

// Exactly |files|, nothing from the environment or the install prefix.
RuntimeOptions only(std::vector<std::string> files) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = std::move(files);
  return options;
}

// Exactly |files|, or what the environment says instead.
RuntimeOptions with_environment(std::vector<std::string> files) {
  RuntimeOptions options = only(std::move(files));
  options.use_environment = true;
  return options;
}

// The record of the plugin given to the runtime as |path|.
const PluginRecord* record_for(const Runtime& runtime, const std::string& path) {
  for (const PluginRecord& record : runtime.plugins()) {
    if (record.manifest_path == path) return &record;
    if (record.manifest_path.empty() && record.library_path == path) return &record;
  }
  return nullptr;
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

// The cpu plugin loaded and cpu:0 round-trips 1 KiB host -> device -> host.
void expect_cpu_works(const Runtime& runtime, const std::string& cpu_path = kCpuManifest) {
  const PluginRecord* cpu = record_for(runtime, cpu_path);
  ASSERT_NE(cpu, nullptr) << "no record for " << cpu_path;
  ASSERT_EQ(cpu->state, PluginState::kLoaded) << cpu->reason;
  EXPECT_EQ(cpu->name, "cpu");
  ASSERT_GE(cpu->device_count, 1);

  Device& device = runtime.device("cpu:0");
  std::vector<uint8_t> sent(1024);
  std::iota(sent.begin(), sent.end(), uint8_t{7});
  std::vector<uint8_t> received(sent.size(), 0);
  Buffer buffer = device.allocate(sent.size());
  device.upload(buffer, 0, sent.data(), sent.size());
  device.download(received.data(), buffer, 0, received.size());
  EXPECT_EQ(received, sent);
}

class BrokenPlugin : public ::testing::TestWithParam<Defect> {
 protected:
  ScratchDir scratch_;
};

TEST_P(BrokenPlugin, IsSkippedWithItsDiagnosticWhileCpuWorks) {
  const Defect& defect = GetParam();
  std::string path = scratch_.place(defect);
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
  for (const Defect& defect : defects()) files.push_back(scratch.place(defect));
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
}  // namespace oar
