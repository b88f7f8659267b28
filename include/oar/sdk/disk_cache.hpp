// A folder of compiled device code that outlives the process: OpenCL program
// binaries, Vulkan pipeline caches. Entries are keyed by a string that names
// everything the artefact depends on (device, driver version, source hash,
// build options); a key that changes misses, so a stale entry is never used.
//
// Location, first that applies:
//   OAR_KERNEL_CACHE_DIR            (used as given)
//   $XDG_CACHE_HOME/oar/<plugin>
//   $HOME/.cache/oar/<plugin>
// OAR_KERNEL_CACHE=0 turns the cache off (every run compiles).
//
// Failures to read or write are never errors: a missing or unwritable folder,
// a truncated or foreign file just mean a miss, and the caller compiles.
//
// Threading: thread-safe; concurrent writers of one key (two processes) each
// write a private temporary file and rename it into place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oar::sdk {

class DiskCache {
 public:
  // The cache of the plugin |plugin_name| as the environment configures it.
  explicit DiskCache(std::string plugin_name);

  bool enabled() const { return !directory_.empty(); }
  // The folder entries live in; empty when the cache is off.
  const std::string& directory() const { return directory_; }

  // The bytes stored under |key|, or nothing (absent, off, unreadable, or a
  // file written for another key).
  std::optional<std::vector<uint8_t>> load(std::string_view key) const;
  // Stores |size| bytes under |key|; false when the cache is off or the
  // write failed (the caller goes on without it).
  bool store(std::string_view key, const void* data, size_t size) const;

  // A stable 64-bit FNV-1a digest of |text| in hex, for building keys from
  // sources and options.
  static std::string digest(std::string_view text);

 private:
  std::string path_of(std::string_view key) const;
  std::string directory_;
};

}  // namespace oar::sdk
