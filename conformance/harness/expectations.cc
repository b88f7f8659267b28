#include "conformance/harness/expectations.h"

#include <fnmatch.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace oar::conformance {
namespace {

bool glob_matches(const std::string& glob, const std::string& id) {
  return fnmatch(glob.c_str(), id.c_str(), 0) == 0;
}

const Expectation* find_match(const std::vector<Expectation>& entries, const std::string& id) {
  for (const auto& entry : entries) {
    if (glob_matches(entry.tests, id)) return &entry;
  }
  return nullptr;
}

std::vector<Expectation> parse_entries(const nlohmann::json& list, const std::string& key,
                                       const std::string& path) {
  auto fault = [&](const std::string& what) {
    return std::runtime_error(path + ": \"" + key + "\" " + what);
  };
  if (!list.is_array()) throw fault("must be an array of {\"tests\": glob, \"reason\": text}");
  std::vector<Expectation> entries;
  for (size_t i = 0; i < list.size(); ++i) {
    const auto& item = list[i];
    const std::string where = "entry " + std::to_string(i);
    if (!item.is_object()) throw fault(where + " is not an object");
    for (const auto& [field, value] : item.items()) {
      if (field != "tests" && field != "reason") throw fault(where + " has unknown key " + field);
    }
    // A reason is required: a skip or a known failure nobody can explain is
    // exactly what certification must not hide.
    for (const char* field : {"tests", "reason"}) {
      if (!item.contains(field) || !item[field].is_string() ||
          item[field].get<std::string>().empty()) {
        throw fault(where + " needs a non-empty string \"" + field + "\"");
      }
    }
    entries.push_back({item["tests"].get<std::string>(), item["reason"].get<std::string>()});
  }
  return entries;
}

}  // namespace

const Expectation* Expectations::find_unsupported(const std::string& id) const {
  return find_match(unsupported, id);
}

const Expectation* Expectations::find_known_failure(const std::string& id) const {
  return find_match(known_failures, id);
}

Expectations load_expectations(const std::string& path) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read expectations file " + path);
  nlohmann::json document;
  try {
    document = nlohmann::json::parse(file);
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not valid JSON: " + e.what());
  }
  if (!document.is_object()) throw std::runtime_error(path + ": must be a JSON object");
  Expectations expectations;
  expectations.path = path;
  for (const auto& [key, value] : document.items()) {
    if (key == "unsupported") {
      expectations.unsupported = parse_entries(value, key, path);
    } else if (key == "known_failures") {
      expectations.known_failures = parse_entries(value, key, path);
    } else if (key != "comment") {
      // Catches typos such as "known_failure" that would silently expect nothing.
      throw std::runtime_error(path + ": unknown key \"" + key +
                               "\" (expected \"unsupported\", \"known_failures\")");
    }
  }
  return expectations;
}

std::optional<std::string> find_expectations(const std::string& name, const std::string& prefix) {
  std::vector<std::filesystem::path> candidates;
#ifdef OAR_CONFORM_SOURCE_DIR
  candidates.push_back(std::filesystem::path(OAR_CONFORM_SOURCE_DIR) / "plugins" / name /
                       "conformance.json");
#endif
  if (!prefix.empty()) {
    candidates.push_back(std::filesystem::path(prefix) / "share/oar/conformance" /
                         (name + ".json"));
  }
  for (const auto& candidate : candidates) {
    std::error_code error;
    if (std::filesystem::is_regular_file(candidate, error)) return candidate.string();
  }
  return std::nullopt;
}

bool matches_filter(const std::string& filter, const std::string& id) {
  if (filter.empty()) return true;
  size_t begin = 0;
  while (begin <= filter.size()) {
    size_t end = filter.find(',', begin);
    if (end == std::string::npos) end = filter.size();
    const std::string glob = filter.substr(begin, end - begin);
    if (!glob.empty() && glob_matches(glob, id)) return true;
    begin = end + 1;
  }
  return false;
}

}  // namespace oar::conformance
