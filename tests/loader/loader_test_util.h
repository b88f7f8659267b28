// What the loader tests share: where the test plugins were built, manifests
// written on the fly, a scratch folder, the environment set per test, and the
// check that the real cpu plugin beside a broken one still works.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "oar/oar.hpp"

namespace oar::loader_test {

namespace fs = std::filesystem;

inline const std::string kPluginDir = OAR_LOADER_TEST_PLUGIN_DIR;
inline const std::string kManifestDir = OAR_LOADER_TEST_MANIFEST_DIR;
// Plugins that crash, end the process or hang while loading: never searched
// by anything but the tests that probe them.
inline const std::string kCrashingDir = OAR_LOADER_TEST_CRASHING_DIR;
inline const std::string kCpuManifest = OAR_TEST_CPU_MANIFEST;
inline const std::string kCpuLibrary = OAR_TEST_CPU_LIBRARY;

inline std::string built_plugin(const std::string& name) {
  return kPluginDir + "/liboar_plugin_" + name + ".so";
}
inline std::string built_manifest(const std::string& name) {
  return kManifestDir + "/" + name + ".json";
}
inline std::string crashing_manifest(const std::string& name) {
  return kCrashingDir + "/" + name + ".json";
}

// A manifest with |plugin_fields| inside "plugin" and |format| as its
// file_format_version.
inline std::string manifest_text(const std::string& plugin_fields,
                                 const std::string& format = "1.0.0") {
  return R"({"file_format_version": ")" + format + R"(", "plugin": {)" + plugin_fields + "}}";
}
inline std::string plugin_fields(const std::string& name, const std::string& library,
                                 const std::string& abi = "1.0") {
  return R"("name": ")" + name + R"(", "library_path": ")" + library + R"(", "abi_version": ")" +
         abi + R"(")";
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
  static constexpr std::array<const char*, 7> kNames = {
      "OAR_PLUGIN_PATH",          "OAR_PLUGINS", "OAR_DEVICES", "OAR_VALIDATE", "OAR_PLUGIN_PROBE",
      "OAR_PLUGIN_PROBE_TIMEOUT", "OAR_LOG"};
  std::vector<std::optional<std::string>> saved_;
};

// Exactly |files|, nothing from the environment or the install prefix.
inline RuntimeOptions only(std::vector<std::string> files) {
  RuntimeOptions options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = std::move(files);
  return options;
}

// Exactly |files|, or what the environment says instead.
inline RuntimeOptions with_environment(std::vector<std::string> files) {
  RuntimeOptions options = only(std::move(files));
  options.use_environment = true;
  return options;
}

// The record of the plugin given to the runtime as |path|.
inline const PluginRecord* record_for(const Runtime& runtime, const std::string& path) {
  for (const PluginRecord& record : runtime.plugins()) {
    if (record.manifest_path == path) return &record;
    if (record.manifest_path.empty() && record.library_path == path) return &record;
  }
  return nullptr;
}

// The cpu plugin loaded and cpu:0 round-trips 1 KiB host -> device -> host.
inline void expect_cpu_works(const Runtime& runtime, const std::string& cpu_path = kCpuManifest) {
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

}  // namespace oar::loader_test
