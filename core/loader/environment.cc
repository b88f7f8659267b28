#include "core/loader/environment.h"

#include <cstdlib>

#include "core/loader/host_services.h"
#include "core/loader/text.h"

namespace oar::loader {
namespace {

std::string lower(std::string text) {
  for (char& c : text) {
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  }
  return text;
}

bool is_digits(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
}

}  // namespace

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

std::optional<bool> parse_flag(const char* name, const std::string& text, std::string* problem) {
  std::string value = lower(text);
  if (value == "1" || value == "true" || value == "yes" || value == "on") return true;
  if (value == "0" || value == "false" || value == "no" || value == "off") return false;
  if (problem != nullptr) {
    *problem = std::string(name) + "=\"" + clipped(text, 64) +
               "\" is not a yes/no value (use 1, true, yes, on or 0, false, no, off)";
  }
  return std::nullopt;
}

bool environment_flag(const char* name, bool fallback) {
  auto text = get_environment(name);
  if (!text) return fallback;
  std::string problem;
  std::optional<bool> value = parse_flag(name, *text, &problem);
  if (value) return *value;
  detail::log_line(OAR_LOG_LEVEL_WARNING, "core",
                   problem + "; taken as " + (fallback ? "on" : "off"));
  return fallback;
}

DeviceFilter::DeviceFilter(const std::string& text, const std::string& source,
                           std::vector<std::string>* problems)
    : source_(source), all_(text.empty()) {
  if (all_) return;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    Entry entry;
    entry.text = text.substr(start, end - start);
    start = end + 1;
    if (entry.text.empty()) continue;  // "cpu:0,,sim" and a trailing comma are harmless
    std::string problem;
    size_t colon = entry.text.rfind(':');
    std::string name = entry.text.substr(0, colon);
    if (entry.text.find_first_of(" \t\r\n\v\f") != std::string::npos) {
      problem = "has spaces";
    } else if (printable(entry.text) != entry.text) {
      problem = "has control characters or bytes that are not UTF-8";
    } else if (name.empty()) {
      problem = "has no plugin name";
    } else if (colon != std::string::npos) {
      std::string index = entry.text.substr(colon + 1);
      if (!is_digits(index)) {
        problem = "has an index that is not a number";
      } else if (index.size() > 9) {
        problem = "has an index beyond any device";
      }
    }
    entry.valid = problem.empty();
    if (!entry.valid && problems != nullptr) {
      problems->push_back(source_ + " entry '" + clipped(entry.text, 64) + "' " + problem +
                          "; it admits no device (entries look like cpu:0 or sim)");
    }
    entries_.push_back(std::move(entry));
  }
  // Nothing but separators admits every device, as an empty filter does.
  all_ = entries_.empty();
}

bool DeviceFilter::admits(const std::string& plugin, int32_t index) {
  if (all_) return true;
  std::string device = plugin + ":" + std::to_string(index);
  bool admitted = false;
  for (Entry& entry : entries_) {
    if (entry.valid && (entry.text == plugin || entry.text == device)) {
      entry.used = true;
      admitted = true;
    }
  }
  return admitted;
}

std::vector<std::string> DeviceFilter::unmatched(const std::vector<std::string>& devices) const {
  std::vector<std::string> warnings;
  std::string known;
  for (const std::string& device : devices) {
    if (known.size() > 200) {
      known += ", ...";
      break;
    }
    known += (known.empty() ? "" : ", ") + printable(device);
  }
  for (const Entry& entry : entries_) {
    if (!entry.valid || entry.used) continue;
    warnings.push_back(source_ + " entry '" + clipped(entry.text, 64) +
                       "' matches no device here (devices: " + (known.empty() ? "none" : known) +
                       ")");
  }
  return warnings;
}

}  // namespace oar::loader
