#include "core/loader/environment.h"

#include <cstdlib>

namespace oar::loader {

std::optional<std::string> get_environment(const char* name) {
  // secure_getenv returns NULL when the process runs with elevated privileges,
  // so a setuid program cannot be made to load a library of the caller's choice.
  const char* value = secure_getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

std::vector<std::string> split_path_list(const std::string& list) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(':', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) parts.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

}  // namespace oar::loader
