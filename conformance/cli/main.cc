// `oar-conform`: certifies that one device of one plugin runs the OAR
// conformance suite. One command, a verdict naming the profile it certifies,
// a report (JSON, JUnit XML, HTML), and on request a signed bundle;
// `oar-conform keygen` makes the signing key, `oar-conform verify` checks a
// bundle.
//
// Exit codes: 0 certified (core or full profile), or a partial (--filter) run
// in which nothing failed; 1 not certified (a test failed, crashed or timed
// out, the profile asked for or even the core profile is not covered, or the
// plugin crashed while loading); 2 usage error, plugin or device not found, a
// plugin with zero devices (nothing to certify), a bad expectations file, an
// empty selection, no signing key or an unwritable bundle. verify: 0 valid,
// 1 not valid (altered, signed by another key, another library), 2 not a
// readable bundle. See docs/conformance.md.
#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "cli/describe.h"
#include "conformance/harness/bundle.h"
#include "conformance/harness/expectations.h"
#include "conformance/harness/profiles.h"
#include "conformance/harness/report.h"
#include "conformance/harness/runner.h"
#include "conformance/harness/signing.h"
#include "conformance/harness/test.h"
#if defined(OAR_CONFORM_COLLECTIVES)
#include "conformance/suites/collectives/collectives.h"
#endif

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
  std::string profile = "best";
  std::string report_dir = "oar-conform-report";
  std::string expectations;
  double timeout_s = 60;
  std::string bundle;
  std::string signing_key;
  bool list = false;
  bool validate = false;
  int collectives_ranks = 0;  // 0: the collectives area does not run
};

struct VerifyArguments {
  std::string bundle;
  std::string key;
  std::string plugin;
};

// Where keygen puts the signing key and --bundle looks for it:
// $XDG_CONFIG_HOME/oar/conform-signing-key.pem (~/.config when unset).
std::string default_signing_key() {
  const char* config = std::getenv("XDG_CONFIG_HOME");
  const char* home = std::getenv("HOME");
  fs::path folder = config != nullptr && *config != '\0' ? fs::path(config)
                    : home != nullptr                    ? fs::path(home) / ".config"
                                                         : fs::path(".");
  return (folder / "oar" / "conform-signing-key.pem").string();
}

// The public key's file beside the private one: key.pem -> key.pub.pem.
std::string public_key_path(const std::string& private_path) {
  fs::path path(private_path);
  if (path.extension() == ".pem") return path.replace_extension(".pub.pem").string();
  return private_path + ".pub";
}

int run_keygen(const std::string& private_path) {
  try {
    std::error_code error;
    const fs::path folder = fs::path(private_path).parent_path();
    if (!folder.empty()) fs::create_directories(folder, error);
    const std::string public_path = public_key_path(private_path);
    oc::generate_signing_key(private_path, public_path);
    std::ifstream file(public_path);
    const std::string pem((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    fmt::print(
        "private key: {} (keep it secret)\npublic key:  {}\nfingerprint: {}\n"
        "Give the public key to whoever checks your bundles (oar-conform verify --key).\n",
        private_path, public_path, oc::public_key_fingerprint(pem));
    return kExitCertified;
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform keygen: {}\n", e.what());
    return kExitUsage;
  }
}

int run_verify(const VerifyArguments& arguments) {
  std::optional<std::string> key;
  if (!arguments.key.empty()) {
    std::ifstream file(arguments.key);
    if (!file) {
      fmt::print(stderr, "oar-conform verify: cannot read the key {}\n", arguments.key);
      return kExitUsage;
    }
    key.emplace((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  }
  std::optional<std::string> plugin;
  if (!arguments.plugin.empty()) plugin = arguments.plugin;
  oc::BundleCheck check;
  try {
    check = oc::verify_bundle(arguments.bundle, key, plugin);
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform verify: {}\n", e.what());
    return kExitUsage;
  }
  if (!check.ok()) {
    fmt::print(stderr, "oar-conform verify: {} is NOT valid:\n", arguments.bundle);
    for (const auto& problem : check.problems) fmt::print(stderr, "  {}\n", problem);
    return kExitNotCertified;
  }
  fmt::print("{}: valid\n  {}\n  signed by Ed25519 key {}{}\n", arguments.bundle, check.summary,
             check.signer_fingerprint,
             check.trusted_key ? " (the key given with --key)"
                               : " (the bundle's own key: pass --key to check who signed it)");
  if (plugin) fmt::print("  {} is the library certified\n", *plugin);
  return kExitCertified;
}

oc::Expectations load_expectations_for(const Arguments& arguments, const std::string& plugin) {
  if (!arguments.expectations.empty()) return oc::load_expectations(arguments.expectations);
  const auto found = oc::find_expectations(plugin, install_prefix());
  return found ? oc::load_expectations(*found) : oc::Expectations{};
}

std::string round_trip_text(double ms) {
  return ms < 0 ? std::string("not measured") : fmt::format("{:.3f} ms", ms);
}

int certify(const Arguments& arguments) {
  PluginSpec spec = parse_plugin_spec(arguments.plugin);
  spec.validate = arguments.validate;
  oc::ProfileRequest request;
  try {
    request = oc::parse_profile_request(arguments.profile);
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
    return kExitUsage;
  }
  // Core and full certify kernels: unless OAR_DECOMPOSE says otherwise, the
  // children run without the core's decompositions. The primitives profile
  // needs them (docs/conformance.md, "Profiles").
  const char* decompose_env = std::getenv("OAR_DECOMPOSE");
  const bool decompose_off = decompose_env != nullptr && (std::string(decompose_env) == "0" ||
                                                          std::string(decompose_env) == "off");
  if (request == oc::ProfileRequest::kPrimitives && decompose_off) {
    fmt::print(stderr,
               "oar-conform: --profile primitives needs decompositions: unset "
               "OAR_DECOMPOSE=0\n");
    return kExitUsage;
  }
  if (decompose_env == nullptr && request != oc::ProfileRequest::kPrimitives) {
    ::setenv("OAR_DECOMPOSE", "0", 1);
  }
  const bool decompositions =
      request == oc::ProfileRequest::kPrimitives || (decompose_env != nullptr && !decompose_off);
  const std::string signing_key =
      arguments.signing_key.empty() ? default_signing_key() : arguments.signing_key;
  if (!arguments.bundle.empty()) {
    try {
      oc::SigningKey check(signing_key);  // before the run, not after it
    } catch (const std::exception& e) {
      fmt::print(stderr, "oar-conform: --bundle: {} (make one with `oar-conform keygen`)\n",
                 e.what());
      return kExitUsage;
    }
  }
  const auto base_timeout = std::chrono::milliseconds(int64_t(arguments.timeout_s * 1000));
  oc::TargetInfo target;
  try {
    target = oc::probe([&] { return open_target(spec, arguments.device); }, base_timeout);
  } catch (const oc::TargetError& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
    return e.kind() == oc::TargetError::Kind::kCrashed ? kExitNotCertified : kExitUsage;
  }

  oc::Expectations expectations;
  std::vector<oc::TestCase> tests;
  try {
    expectations = load_expectations_for(arguments, target.plugin.name);
    tests = oc::select_tests(register_all_suites, target.properties, arguments.filter);
    if (request == oc::ProfileRequest::kCore) {
      tests = oc::tests_of_profile(tests, oc::Profile::kCore, target.properties);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "oar-conform: {}\n", e.what());
    return kExitUsage;
  }
  if (arguments.list) {
    for (const auto& test : tests) fmt::print("{}\n", test.id);
#if defined(OAR_CONFORM_COLLECTIVES)
    oc::CollectivesRun run;  // the area's ids: with --collectives-ranks N, for N ranks
    if (arguments.collectives_ranks > 0) run.ranks = arguments.collectives_ranks;
    run.device_count = target.plugin.device_count;
    run.filter = arguments.filter;
    const auto ids = oc::collectives_ids(run, target.properties);
    if (arguments.collectives_ranks > 0) {
      for (const auto& id : ids) fmt::print("{}\n", id);
    } else if (!ids.empty()) {
      fmt::print(stderr,
                 "oar-conform: and {} collectives/... id(s) for 2 ranks, listed and run "
                 "with --collectives-ranks N\n",
                 ids.size());
    }
#endif
    return kExitCertified;
  }
  if (tests.empty() && arguments.collectives_ranks == 0) {
    fmt::print(stderr, "oar-conform: no test matches --filter '{}' (--list shows them all)\n",
               arguments.filter);
    return kExitUsage;
  }

  std::error_code error;
  fs::create_directories(arguments.report_dir, error);
  oc::RunOptions options;
  options.timeout = oc::test_timeout(base_timeout, target.speed);
  options.expectations = expectations;
  options.child_output_log = (fs::path(arguments.report_dir) / "test-output.log").string();
  std::ofstream(options.child_output_log, std::ios::trunc);  // there even when nobody prints
  Progress progress(tests.size(), isatty(STDOUT_FILENO) != 0);
  options.on_start = [&](const oc::TestCase& test) { progress.start(test); };
  options.on_result = [&](const oc::TestResult& result) { progress.result(result); };

  const bool partial = !arguments.filter.empty();
  fmt::print("oar-conform {}: plugin {} {} (ABI {}.{}) on {} ({}), {} test(s)\n", oc::kSuiteVersion,
             target.plugin.name, target.plugin.version, target.plugin.abi_major,
             target.plugin.abi_minor, target.device_name, target.properties.name, tests.size());
  fmt::print(
      "profile: {}{}\n",
      partial ? "none (a filtered run is partial: it certifies nothing)"
      : request == oc::ProfileRequest::kBest ? "the best one the run covers (core or full)"
                                             : oc::profile_request_name(request),
      request == oc::ProfileRequest::kCore && !partial ? " (operators outside it not run)" : "");
  fmt::print("expectations: {}\n",
             expectations.path.empty() ? "none (every test must pass)" : expectations.path);
  fmt::print(
      "limit per test: {:.1f} s ({:.1f} s + {} x the device's round trip: copy {}, f32 add "
      "of 2^20 elements {}){}\n",
      options.timeout.count() / 1e3, base_timeout.count() / 1e3, oc::kRoundTripsPerTest,
      round_trip_text(target.speed.copy_round_trip_ms),
      round_trip_text(target.speed.kernel_round_trip_ms),
      target.speed.note.empty() ? "" : "; " + target.speed.note);
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
#if defined(OAR_CONFORM_COLLECTIVES)
  if (arguments.collectives_ranks > 0) {
    // The collectives area starts its ranks itself (docs/conformance.md).
    oc::CollectivesRun run;
    std::error_code self_error;
    run.self = fs::read_symlink("/proc/self/exe", self_error).string();
    run.plugin = exact.text;
    run.device = arguments.device;
    run.device_count = target.plugin.device_count;
    run.ranks = arguments.collectives_ranks;
    run.validate = spec.validate;
    run.filter = arguments.filter;
    run.work_dir = fs::absolute(arguments.report_dir).string();
    run.log = options.child_output_log;
    run.timeout = options.timeout;
    fmt::print("collectives: {} rank(s): {}\n", run.ranks, oc::collectives_command(run));
    std::fflush(stdout);
    size_t failed = 0, passed = 0;
    auto collective_results =
        oc::run_collectives(run, target.properties, [&](const oc::TestResult& r) {
          if (oc::is_failure(r.status)) {
            ++failed;
            fmt::print("{:<13} {} ({:.1f} ms)\n    {}\n", oc::status_name(r.status), r.id,
                       r.duration_ms, r.message);
          } else if (r.status == oc::Status::kPassed) {
            ++passed;
          }
        });
    fmt::print("collectives: {} passed, {} failed of {}\n", passed, failed,
               collective_results.size());
    report.results.insert(report.results.end(), collective_results.begin(),
                          collective_results.end());
  }
#endif
  report.duration_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  report.target = target;
  report.expectations_path = expectations.path;
  report.filter = arguments.filter;
  report.base_timeout = base_timeout;
  report.test_timeout = options.timeout;
  report.judgement = oc::judge(report.results, target.properties, request, partial, decompositions);
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

  if (!arguments.bundle.empty()) {
    try {
      oc::write_bundle(report, arguments.report_dir, arguments.bundle, signing_key);
      fmt::print("bundle: {} (signed with {})\n", arguments.bundle, signing_key);
    } catch (const std::exception& e) {
      fmt::print(stderr, "oar-conform: --bundle: {}\n", e.what());
      return kExitUsage;
    }
  }

  const oc::Counts counts = oc::count(report.results);
  const oc::Judgement& judgement = report.judgement;
  fmt::print("{}\n", judgement.headline());
  for (size_t i = 1; i < judgement.reasons.size(); ++i) {
    fmt::print("  also: {}\n", judgement.reasons[i]);
  }
  fmt::print("{} crashed, {} timeout, {} known failure(s); report in {}/report.html\n",
             counts[oc::Status::kCrashed], counts[oc::Status::kTimeout],
             counts[oc::Status::kKnownFailure], arguments.report_dir);
  // The last line, parsed by CI: crashes and timeouts count as failed, known
  // failures as skipped.
  fmt::print("{} passed, {} failed, {} skipped\n", counts[oc::Status::kPassed], counts.failures(),
             counts[oc::Status::kSkipped] + counts[oc::Status::kKnownFailure]);
  return judgement.verdict == oc::Verdict::kNotCertified ? kExitNotCertified : kExitCertified;
}

}  // namespace

int main(int argc, char** argv) {
#if defined(OAR_CONFORM_COLLECTIVES)
  // One rank of the collectives area, started by oar-conform itself.
  if (argc > 1 && std::string(argv[1]) == "collectives-worker") {
    return oc::collectives_worker_main(argc, argv);
  }
#endif
  CLI::App app{
      "oar-conform: certify one device of an OAR plugin against the conformance suite\n"
      "  oar-conform --plugin NAME|PATH [options]   run the suite, write the report\n"
      "  oar-conform keygen [--signing-key FILE]     make a key to sign bundles\n"
      "  oar-conform verify BUNDLE [--key PUB] [--plugin LIB]   check a bundle"};
  app.require_subcommand(0, 1);
  Arguments arguments;
  app.add_option("--plugin", arguments.plugin,
                 "a plugin name found by the normal search (manifests, OAR_PLUGIN_PATH), or "
                 "the path of a manifest (.json) or library (.so) to load alone");
  app.add_option("--device", arguments.device, "the plugin's own device index")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--filter", arguments.filter,
                 "comma-separated globs over test ids, e.g. 'ops/add/*,abi/*' ('*' matches '/'); "
                 "a filtered run is partial, never certified");
  app.add_option("--report", arguments.report_dir,
                 "folder for report.json, junit.xml, report.html and test-output.log")
      ->capture_default_str();
  app.add_option("--expectations", arguments.expectations,
                 "the plugin's conformance.json (default: plugins/<name>/conformance.json of "
                 "the source tree, then <prefix>/share/oar/conformance/<name>.json)");
  app.add_option("--profile", arguments.profile,
                 "what to certify: best (the full profile if the run covers it, else core), "
                 "core (runs only what the core profile needs), full, or primitives (every "
                 "operator and model runs, natively or through the core's decompositions)")
      ->check(CLI::IsMember({"best", "core", "full", "primitives"}))
      ->capture_default_str();
  app.add_option("--timeout", arguments.timeout_s,
                 "seconds one test may run on a fast device; the limit grows by 100 times the "
                 "device's measured round trip")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--bundle", arguments.bundle,
                 "also write a signed certification bundle (.tar.gz) to this file");
  app.add_option(
      "--signing-key", arguments.signing_key,
      "the Ed25519 private key (PEM) that signs --bundle (default: " + default_signing_key() + ")");
  app.add_flag("--list", arguments.list, "print the selected test ids and exit");
#if defined(OAR_CONFORM_COLLECTIVES)
  app.add_option("--collectives-ranks", arguments.collectives_ranks,
                 "also run the collectives area with N ranks: the core's staged engine under "
                 "mpiexec -n N (OAR_MPIEXEC overrides mpiexec) and, for a device that lists "
                 "OAR_DEVICE_FEATURE_COLLECTIVES, the plugin's own slots on N of its devices")
      ->check(CLI::Range(1, 64));
#endif
  app.add_flag("--validate", arguments.validate,
               "run under the core's validation layer (as OAR_VALIDATE=1): a call it refuses "
               "fails its test, and what it reports lands in test-output.log");

  CLI::App* keygen = app.add_subcommand(
      "keygen", "make an Ed25519 key pair to sign bundles (the public key goes beside it)");
  std::string keygen_path = default_signing_key();
  keygen->add_option("--signing-key", keygen_path, "where the private key goes")
      ->capture_default_str();

  CLI::App* verify = app.add_subcommand(
      "verify", "check a bundle's signature, its members and (with --plugin) the library");
  VerifyArguments verify_arguments;
  verify->add_option("bundle", verify_arguments.bundle, "the bundle (.tar.gz)")->required();
  verify->add_option("--key", verify_arguments.key,
                     "the signer's public key (PEM) to trust; without it, the key inside the "
                     "bundle only proves the bundle is intact");
  verify->add_option("--plugin", verify_arguments.plugin,
                     "a plugin library (.so) or manifest (.json) that must be the one certified");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? kExitCertified : kExitUsage;
  }
  if (keygen->parsed()) return run_keygen(keygen_path);
  if (verify->parsed()) return run_verify(verify_arguments);
  if (arguments.plugin.empty()) {
    fmt::print(stderr, "oar-conform: --plugin is required (--help shows the commands)\n");
    return kExitUsage;
  }
  return certify(arguments);
}
