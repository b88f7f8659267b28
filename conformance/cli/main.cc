// `oar-conform`: certifies that one device of one plugin runs the OAR
// conformance suite. One command, a verdict, a report (JSON, JUnit XML, HTML).
//
// Exit codes: 0 certified; 1 not certified (a test failed, crashed or timed
// out, or the plugin crashed while loading); 2 usage error, plugin or device
// not found, a plugin with zero devices (nothing to certify), a bad
// expectations file, or an empty selection. See docs/conformance.md.
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli/describe.h"
#include "conformance/harness/expectations.h"
#include "conformance/harness/report.h"
#include "conformance/harness/runner.h"
#include "conformance/harness/sha256.h"
#include "conformance/harness/test.h"

namespace {

namespace fs = std::filesystem;
namespace oc = oar::conformance;

constexpr int kExitCertified = 0;
constexpr int kExitNotCertified = 1;
constexpr int kExitUsage = 2;

// What --plugin names: a plugin found by the runtime's search, or exactly one
// manifest or library.
struct PluginSpec {
  std::string text;
  bool is_path = false;
  bool validate = false;  // --validate: the core's validation layer checks every call
};

PluginSpec parse_plugin_spec(const std::string& text) {
  const bool is_path =
      text.find('/') != std::string::npos || fs::path(text).extension() == ".json" ||
      fs::path(text).extension() == ".so" || text.find(".so.") != std::string::npos;
  return {is_path ? fs::absolute(text).string() : text, is_path, false};
}

oar::RuntimeOptions runtime_options(const PluginSpec& spec) {
  oar::RuntimeOptions options;  // a name: the normal search, OAR_PLUGIN_PATH included
  options.validate = spec.validate;
  if (!spec.is_path) return options;
  options.use_environment = false;
  options.search_install_prefix = false;
  options.plugin_files = {spec.text};
  return options;
}

std::string describe_plugins(const oar::Runtime& runtime) {
  if (runtime.plugins().empty()) return "  (none)\n";
  std::string text;
  for (const auto& r : runtime.plugins()) {
    if (r.state == oar::PluginState::kLoaded) {
      text += fmt::format("  {:<12} loaded, {} device(s)  {}\n", r.name, r.device_count,
                          r.manifest_path.empty() ? r.library_path : r.manifest_path);
    } else {
      text += fmt::format("  {:<12} skipped: {}: {}  {}\n", r.name, oar::status_name(r.code),
                          r.reason, r.manifest_path.empty() ? r.library_path : r.manifest_path);
    }
  }
  return text;
}

// Opens device |index| of the plugin |spec| names. Runs in child processes.
oc::Target open_target(const PluginSpec& spec, int index) {
  using Kind = oc::TargetError::Kind;
  oc::Target target;
  target.runtime = std::make_unique<oar::Runtime>(runtime_options(spec));
  const oar::Runtime& runtime = *target.runtime;
  const oar::PluginRecord* record = nullptr;
  for (const auto& candidate : runtime.plugins()) {
    if (spec.is_path || candidate.name == spec.text) record = &candidate;
  }
  if (record == nullptr) {
    throw oc::TargetError(
        Kind::kUnavailable,
        fmt::format("no plugin named '{}'. Plugins found:\n{}OAR_PLUGIN_PATH adds manifest "
                    "folders; --plugin also takes a manifest (.json) or library (.so) path.",
                    spec.text, describe_plugins(runtime)));
  }
  if (record->state != oar::PluginState::kLoaded) {
    throw oc::TargetError(Kind::kUnavailable,
                          fmt::format("plugin '{}' was found but not loaded: {}: {}", record->name,
                                      oar::status_name(record->code), record->reason));
  }
  if (record->device_count == 0) {
    throw oc::TargetError(
        Kind::kNoDevices,
        fmt::format("plugin '{}' loaded but serves zero devices: nothing to certify (is its "
                    "hardware or vendor runtime present?)",
                    record->name));
  }
  std::string visible;
  for (oar::Device* device : runtime.devices()) {
    if (device->plugin_name() != record->name) continue;
    if (device->index() == index) {
      target.device = device;
      return target;
    }
    visible += (visible.empty() ? "" : ", ") + device->name();
  }
  throw oc::TargetError(Kind::kUnavailable,
                        fmt::format("plugin '{}' has no visible device {} (visible: {})",
                                    record->name, index, visible.empty() ? "none" : visible));
}

void register_all_suites(oc::Registry& registry, const oar_device_properties_t& properties) {
  oc::register_abi_suite(registry, properties);
  oc::register_op_suite(registry, properties);
  oc::register_model_suite(registry, properties);
}

// The folder above bin/, where the install tree keeps share/oar/.
std::string install_prefix() {
  std::error_code error;
  const fs::path executable = fs::read_symlink("/proc/self/exe", error);
  return error ? "" : executable.parent_path().parent_path().string();
}

// Live progress: one rewritten line on a terminal, one line per test
// otherwise (CI logs). Failures are always printed in full.
class Progress {
 public:
  Progress(size_t total, bool terminal) : total_(total), terminal_(terminal) {}

  void start(const oc::TestCase& test) {
    current_ = test.id;
    if (terminal_) redraw();
  }

  void result(const oc::TestResult& result) {
    ++done_;
    ++counts_.by_status[size_t(result.status)];
    const bool failed = oc::is_failure(result.status);
    if (terminal_) {
      if (failed) {
        std::fputs("\r\033[K", stdout);
        print_result(result);
      }
      redraw();
      return;
    }
    print_result(result);
  }

  void finish() {
    if (terminal_) std::fputs("\r\033[K", stdout);
    std::fflush(stdout);
  }

 private:
  void print_result(const oc::TestResult& result) {
    fmt::print("[{:>{}}/{}] {:<13} {} ({:.1f} ms)\n", done_, width(), total_,
               oc::status_name(result.status), result.id, result.duration_ms);
    if (result.message.empty() || result.status == oc::Status::kPassed) return;
    // Indented so a CI log reads as one block per test.
    std::string indented = "    ";
    for (char c : result.message) indented += c == '\n' ? std::string("\n    ") : std::string(1, c);
    fmt::print("{}\n", indented);
  }

  void redraw() {
    std::string line =
        fmt::format("[{:>{}}/{}] {} passed, {} failed, {} skipped  {}", done_, width(), total_,
                    counts_[oc::Status::kPassed], counts_.failures(),
                    counts_[oc::Status::kSkipped] + counts_[oc::Status::kKnownFailure], current_);
    winsize size{};
    const size_t columns =
        ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0 ? size.ws_col : 80;
    if (line.size() >= columns) line.resize(columns - 1);
    std::fputs("\r\033[K", stdout);
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
  }

  int width() const { return int(std::to_string(total_).size()); }

  size_t total_;
  bool terminal_;
  size_t done_ = 0;
  oc::Counts counts_;
  std::string current_;
};

struct Arguments {
  std::string plugin;
  int device = 0;
  std::string filter;
  std::string report_dir = "oar-conform-report";
  std::string expectations;
  double timeout_s = 120;
  bool list = false;
  bool validate = false;
};

oc::Expectations load_expectations_for(const Arguments& arguments, const std::string& plugin) {
  if (!arguments.expectations.empty()) return oc::load_expectations(arguments.expectations);
  const auto found = oc::find_expectations(plugin, install_prefix());
  return found ? oc::load_expectations(*found) : oc::Expectations{};
}

int certify(const Arguments& arguments) {
  PluginSpec spec = parse_plugin_spec(arguments.plugin);
  spec.validate = arguments.validate;
  const auto timeout = std::chrono::milliseconds(int64_t(arguments.timeout_s * 1000));
  oc::TargetInfo target;
  try {
    target = oc::probe([&] { return open_target(spec, arguments.device); }, timeout);
  } catch (const oc::TargetError& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
    return e.kind() == oc::TargetError::Kind::kCrashed ? kExitNotCertified : kExitUsage;
  }

  oc::Expectations expectations;
  std::vector<oc::TestCase> tests;
  try {
    expectations = load_expectations_for(arguments, target.plugin.name);
    tests = oc::select_tests(register_all_suites, target.properties, arguments.filter);
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
    return kExitUsage;
  }
  if (arguments.list) {
    for (const auto& test : tests) fmt::print("{}\n", test.id);
    return kExitCertified;
  }
  if (tests.empty()) {
    fmt::print(stderr, "oar-conform: no test matches --filter '{}' (--list shows them all)\n",
               arguments.filter);
    return kExitUsage;
  }

  std::error_code error;
  fs::create_directories(arguments.report_dir, error);
  oc::RunOptions options;
  options.timeout = timeout;
  options.expectations = expectations;
  options.child_output_log = (fs::path(arguments.report_dir) / "test-output.log").string();
  fs::remove(options.child_output_log, error);
  Progress progress(tests.size(), isatty(STDOUT_FILENO) != 0);
  options.on_start = [&](const oc::TestCase& test) { progress.start(test); };
  options.on_result = [&](const oc::TestResult& result) { progress.result(result); };

  fmt::print("oar-conform {}: plugin {} {} (ABI {}.{}) on {} ({}), {} test(s)\n", oc::kSuiteVersion,
             target.plugin.name, target.plugin.version, target.plugin.abi_major,
             target.plugin.abi_minor, target.device_name, target.properties.name, tests.size());
  fmt::print("expectations: {}\n",
             expectations.path.empty() ? "none (every test must pass)" : expectations.path);
  std::fflush(stdout);

  // Children load exactly the manifest the probe resolved, not every plugin
  // the search finds: another plugin crashing at load must not fail this one.
  const PluginSpec exact{target.plugin.manifest_path.empty() ? target.plugin.library_path
                                                             : target.plugin.manifest_path,
                         true, spec.validate};
  if (spec.validate) fmt::print("validation layer: on (every ABI call is checked)\n");
  const auto started = std::chrono::steady_clock::now();
  oc::Report report;
  report.results = oc::run_tests(
      tests, [&] { return open_target(exact, arguments.device); }, register_all_suites, options);
  progress.finish();
  report.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  report.target = target;
  report.expectations_path = expectations.path;
  report.filter = arguments.filter;
  try {
    report.library_sha256 = oc::sha256_file_hex(target.plugin.library_path);
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
  }
  try {
    oc::write_report(report, arguments.report_dir);
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
    return kExitUsage;
  }

  const oc::Counts counts = oc::count(report.results);
  fmt::print("{}: {} crashed, {} timeout, {} known failure(s); report in {}/report.html\n",
             counts.certified() ? "CERTIFIED" : "NOT CERTIFIED", counts[oc::Status::kCrashed],
             counts[oc::Status::kTimeout], counts[oc::Status::kKnownFailure], arguments.report_dir);
  // The last line, parsed by CI: crashes and timeouts count as failed, known
  // failures as skipped.
  fmt::print("{} passed, {} failed, {} skipped\n", counts[oc::Status::kPassed], counts.failures(),
             counts[oc::Status::kSkipped] + counts[oc::Status::kKnownFailure]);
  return counts.certified() ? kExitCertified : kExitNotCertified;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oar-conform: certify one device of an OAR plugin against the conformance suite"};
  Arguments arguments;
  app.add_option("--plugin", arguments.plugin,
                 "a plugin name found by the normal search (manifests, OAR_PLUGIN_PATH), or "
                 "the path of a manifest (.json) or library (.so) to load alone")
      ->required();
  app.add_option("--device", arguments.device, "the plugin's own device index")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--filter", arguments.filter,
                 "comma-separated globs over test ids, e.g. 'ops/add/*,abi/*' ('*' matches '/')");
  app.add_option("--report", arguments.report_dir,
                 "folder for report.json, junit.xml, report.html and test-output.log")
      ->capture_default_str();
  app.add_option("--expectations", arguments.expectations,
                 "the plugin's conformance.json (default: plugins/<name>/conformance.json of "
                 "the source tree, then <prefix>/share/oar/conformance/<name>.json)");
  app.add_option("--timeout", arguments.timeout_s,
                 "seconds one test process (one group of tests) may run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_flag("--list", arguments.list, "print the selected test ids and exit");
  app.add_flag("--validate", arguments.validate,
               "run under the core's validation layer (as OAR_VALIDATE=1): a call it refuses "
               "fails its test, and what it reports lands in test-output.log");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitCertified : kExitUsage;
  }
  return certify(arguments);
}
