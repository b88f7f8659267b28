#include "core/loader/discovery.h"

#include <dlfcn.h>

#include <algorithm>
#include <filesystem>

#include "core/loader/environment.h"
#include "core/loader/manifest.h"
#include "core/loader/text.h"

namespace fs = std::filesystem;

namespace oar::loader {
namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

Candidate from_manifest(const std::string& path) {
  Candidate candidate;
  candidate.manifest_path = path;
  candidate.name = fs::path(path).stem().string();
  auto manifest = read_manifest(path);
  if (!manifest.ok()) {
    candidate.status = manifest.status();
    return candidate;
  }
  const Manifest& m = manifest.value();
  candidate.name = m.name;
  candidate.library_path = m.library_path;
  if (m.abi_major != 1) {
    candidate.status = Status(OAR_STATUS_FAILED_PRECONDITION,
                              "manifest " + printable(path) + " declares ABI " +
                                  std::to_string(m.abi_major) + "." + std::to_string(m.abi_minor) +
                                  "; this OAR speaks ABI 1.x (install a matching plugin)");
  }
  return candidate;
}

Candidate from_file(const std::string& path) {
  if (ends_with(path, ".json")) return from_manifest(path);
  Candidate candidate;
  candidate.library_path = path;
  return candidate;
}

// Every *.json in |dir|, sorted by name so that the order is reproducible.
void add_manifest_dir(const std::string& dir, std::vector<Candidate>* out) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) return;
  std::vector<std::string> manifests;
  // increment(error), not the range-for's operator++, which throws.
  for (fs::directory_iterator it(dir, error), end; !error && it != end; it.increment(error)) {
    if (it->path().extension() == ".json") manifests.push_back(it->path().string());
  }
  std::sort(manifests.begin(), manifests.end());
  for (const auto& path : manifests) out->push_back(from_manifest(path));
}

}  // namespace

std::string install_manifest_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&install_manifest_dir), &info) == 0 ||
      info.dli_fname == nullptr) {
    return {};
  }
  std::error_code error;
  fs::path library = fs::weakly_canonical(info.dli_fname, error);
  if (error) library = info.dli_fname;
  return (library.parent_path() / OAR_MANIFEST_DIR_FROM_LIBDIR).lexically_normal().string();
}

std::vector<Candidate> discover(const RuntimeOptions& options) {
  std::vector<Candidate> candidates;
  std::vector<std::string> files = options.plugin_files;
  if (options.use_environment) {
    if (auto list = get_environment("OAR_PLUGINS")) files = split_path_list(*list);
  }
  if (!files.empty()) {
    for (const auto& file : files) candidates.push_back(from_file(file));
    return candidates;
  }
  if (options.search_install_prefix) {
    std::string dir = install_manifest_dir();
    if (!dir.empty()) add_manifest_dir(dir, &candidates);
  }
  for (const auto& dir : options.plugin_paths) add_manifest_dir(dir, &candidates);
  if (options.use_environment) {
    if (auto paths = get_environment("OAR_PLUGIN_PATH")) {
      for (const auto& dir : split_path_list(*paths)) add_manifest_dir(dir, &candidates);
    }
  }
  return candidates;
}

}  // namespace oar::loader
