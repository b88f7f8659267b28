// Reading the environment the way a runtime that may run in privileged
// processes must: variables are ignored in setuid/setgid processes.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace oar::loader {

// The value of |name|, or nothing when unset, empty, or the process is setuid.
std::optional<std::string> get_environment(const char* name);

// Splits a colon-separated list, dropping empty entries.
std::vector<std::string> split_path_list(const std::string& list);

}  // namespace oar::loader
