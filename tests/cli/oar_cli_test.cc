// `oar list` end to end against what issue 12 found: a plugin that crashes
// while loading killed it with no output; text that is not UTF-8 (a Latin-1
// manifest name, a byte quoted in a parse error) aborted `--json`; a long
// name padded every row to its width. The list must name the crashing plugin,
// stay valid JSON, and keep its rows short.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

const std::string kOar = OAR_TEST_OAR_EXE;
const std::string kCrashingDir = OAR_LOADER_TEST_CRASHING_DIR;
const std::string kManifestDir = OAR_LOADER_TEST_MANIFEST_DIR;
const std::string kPluginDir = OAR_LOADER_TEST_PLUGIN_DIR;
const std::string kCpuManifest = OAR_TEST_CPU_MANIFEST;

struct Output {
  int status = -1;
  std::string text;
};

// Runs `oar <arguments>` with |environment| prefixed ("NAME=value ...").
Output run_oar(const std::string& environment, const std::string& arguments) {
  std::string command = environment + " '" + kOar + "' " + arguments + " 2>/dev/null";
  Output output;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return output;
  char buffer[65536];
  size_t n;
  while ((n = fread(buffer, 1, sizeof(buffer), pipe)) > 0) output.text.append(buffer, n);
  int status = pclose(pipe);
  output.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return output;
}

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "oar_cli_test_XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed";
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path_, ignored);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::string path = (path_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

std::string manifest(const std::string& name, const std::string& library) {
  return R"({"file_format_version": "1.0.0", "plugin": {"name": ")" + name +
         R"(", "library_path": ")" + library + R"(", "abi_version": "1.0"}})";
}

// A folder with the crashing plugins, a Latin-1 manifest name, a bad byte
// quoted in a parse error, and a library whose file name is 200 bytes long.
class HostileList : public ::testing::Test {
 protected:
  void SetUp() override {
    for (std::string plugin : {"c_segv_in_init", "c_abort_in_init", "c_hang_in_init"}) {
      scratch_.write(plugin + ".json",
                     manifest(plugin, kPluginDir + "/liboar_plugin_" + plugin + ".so"));
    }
    scratch_.write("caf\xE9.json", manifest("nothing", "nowhere.so"));
    scratch_.write("latin1.json", "{\"plugin\": \"caf\xE9\"}");
    long_library_ = scratch_.write("liboar_plugin_" + std::string(200, 'l') + ".so", "not ELF");
    environment_ = "OAR_PLUGIN_PROBE_TIMEOUT=2 OAR_PLUGIN_PATH='" + scratch_.path().string() + ":" +
                   kManifestDir + "'";
  }

  ScratchDir scratch_;
  std::string long_library_;
  std::string environment_;
};

TEST_F(HostileList, JsonIsValidUtf8AndNamesTheCrashingPlugins) {
  Output out = run_oar(environment_, "list --json");
  ASSERT_EQ(out.status, 0) << out.text;
  nlohmann::json document;
  ASSERT_NO_THROW(document = nlohmann::json::parse(out.text)) << out.text;
  std::map<std::string, std::string> reasons;
  for (const auto& plugin : document["plugins"]) {
    if (plugin["state"] == "skipped") reasons[plugin["name"]] = plugin["reason"];
  }
  EXPECT_THAT(reasons["c_segv_in_init"], HasSubstr("crashed with SIGSEGV"));
  EXPECT_THAT(reasons["c_abort_in_init"], HasSubstr("crashed with SIGABRT"));
  EXPECT_THAT(reasons["c_hang_in_init"], HasSubstr("did not finish loading within 2 s"));
  bool cpu = false;
  for (const auto& device : document["devices"]) cpu |= device["plugin"] == "cpu";
  EXPECT_TRUE(cpu) << "the cpu device is listed beside the crashing plugins";
}

TEST_F(HostileList, TextRowsStayShortAndAligned) {
  Output out = run_oar("OAR_PLUGINS='" + long_library_ + ":" + kCpuManifest + "'", "list");
  ASSERT_EQ(out.status, 0) << out.text;
  std::istringstream lines(out.text);
  std::string line;
  bool cpu_row = false;
  while (std::getline(lines, line)) {
    EXPECT_LT(line.size(), 2400u) << line.substr(0, 200);
    if (line.rfind("  cpu ", 0) == 0) {
      cpu_row = true;
      EXPECT_TRUE(std::regex_search(line, std::regex("^  cpu {1,24}loaded"))) << line;
    }
  }
  EXPECT_TRUE(cpu_row) << out.text;
  EXPECT_THAT(out.text, HasSubstr("(200 bytes)"));
}

TEST_F(HostileList, ProbeCanBeTurnedOff) {
  // Without the probe a crashing plugin takes `oar list` down: the probe is
  // what keeps it alive, and OAR_PLUGIN_PROBE=0 is honoured.
  Output out =
      run_oar("OAR_PLUGIN_PROBE=0 OAR_PLUGINS='" + kCrashingDir + "/c_segv_in_init.json'", "list");
  EXPECT_NE(out.status, 0);
}

}  // namespace
