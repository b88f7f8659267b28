#include "oar/sdk/disk_cache.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>

namespace oar::sdk {
namespace {

// Every entry starts with this magic and the full key, so that two keys with
// one digest can never hand each other's bytes back.
constexpr char kMagic[] = "OARKC1\n";

std::string environment(const char* name) {
  const char* value = secure_getenv(name);
  return value == nullptr ? std::string() : std::string(value);
}

// mkdir -p; true when |path| is a folder afterwards.
bool make_directories(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string prefix = path.substr(0, slash);
    if (::mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) return false;
    if (slash == std::string::npos) break;
  }
  struct stat info {};
  return ::stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

}  // namespace

DiskCache::DiskCache(std::string plugin_name) {
  if (environment("OAR_KERNEL_CACHE") == "0") return;
  std::string directory = environment("OAR_KERNEL_CACHE_DIR");
  if (directory.empty()) {
    std::string base = environment("XDG_CACHE_HOME");
    if (base.empty() || base[0] != '/') {  // the XDG spec ignores relative paths
      const std::string home = environment("HOME");
      if (home.empty()) return;
      base = home + "/.cache";
    }
    directory = base + "/oar/" + plugin_name;
  }
  if (make_directories(directory)) directory_ = std::move(directory);
}

std::string DiskCache::digest(std::string_view text) {
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(hash));
  return hex;
}

std::string DiskCache::path_of(std::string_view key) const {
  return directory_ + "/" + digest(key) + ".bin";
}

std::optional<std::vector<uint8_t>> DiskCache::load(std::string_view key) const {
  if (!enabled()) return std::nullopt;
  std::ifstream file(path_of(key), std::ios::binary);
  if (!file) return std::nullopt;
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                             std::istreambuf_iterator<char>());
  const std::string header = std::string(kMagic) + std::string(key) + '\0';
  if (bytes.size() < header.size() || std::memcmp(bytes.data(), header.data(), header.size()) != 0)
    return std::nullopt;
  bytes.erase(bytes.begin(), bytes.begin() + std::ptrdiff_t(header.size()));
  return bytes;
}

bool DiskCache::store(std::string_view key, const void* data, size_t size) const {
  if (!enabled()) return false;
  const std::string path = path_of(key);
  std::string temporary = path + ".XXXXXX";
  const int fd = ::mkstemp(temporary.data());
  if (fd < 0) return false;
  const std::string header = std::string(kMagic) + std::string(key) + '\0';
  bool ok = true;
  for (auto [bytes, count] : {std::pair<const char*, size_t>{header.data(), header.size()},
                              {static_cast<const char*>(data), size}}) {
    while (ok && count > 0) {
      const ssize_t written = ::write(fd, bytes, count);
      if (written < 0 && errno == EINTR) continue;
      ok = written > 0;
      if (ok) {
        bytes += written;
        count -= size_t(written);
      }
    }
  }
  ok = (::close(fd) == 0) && ok;
  if (ok) ok = std::rename(temporary.c_str(), path.c_str()) == 0;
  if (!ok) std::remove(temporary.c_str());
  return ok;
}

}  // namespace oar::sdk
