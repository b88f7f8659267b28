// Reading the environment the way a runtime that may run in privileged
// processes must: variables are ignored in setuid/setgid processes. And
// parsing it strictly: a value that means nothing is reported by name, never
// taken silently as something else.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oar::loader {

// The value of |name|, or nothing when unset, empty, or the process is setuid.
std::optional<std::string> get_environment(const char* name);

// Splits a colon-separated list, dropping empty entries.
std::vector<std::string> split_path_list(const std::string& list);

// A yes/no setting: "1", "true", "yes", "on" and "0", "false", "no", "off"
// (any case). Anything else is nothing, and |problem| says why.
std::optional<bool> parse_flag(const char* name, const std::string& text, std::string* problem);

// get_environment + parse_flag: |fallback| when unset; a value that is no
// flag is logged as a warning and |fallback| used.
bool environment_flag(const char* name, bool fallback);

// The visible-device filter of OAR_DEVICES / RuntimeOptions::device_filter:
// comma-separated plugin names ("sim": every device of it) and device names
// ("cpu:0"). An empty text admits every device.
class DeviceFilter {
 public:
  // Parses |text|; |source| ("OAR_DEVICES") names it in the problems. An
  // entry with spaces or control characters, an empty name or an index that
  // is no number gets a line in |problems| and admits nothing.
  DeviceFilter(const std::string& text, const std::string& source,
               std::vector<std::string>* problems);

  // Whether the device |index| of plugin |plugin| (named "<plugin>:<index>")
  // is visible; remembers which entries admitted something.
  bool admits(const std::string& plugin, int32_t index);

  // One warning per entry that admitted no device: "OAR_DEVICES entry 'cpu0'
  // matches no device here (devices: cpu:0, sim:0)"; |devices| lists every
  // device found, visible or not.
  std::vector<std::string> unmatched(const std::vector<std::string>& devices) const;

 private:
  struct Entry {
    std::string text;
    bool valid = false;
    bool used = false;
  };
  std::string source_;
  bool all_ = true;
  std::vector<Entry> entries_;
};

}  // namespace oar::loader
