// A loaded, validated and initialized plugin: its library, a copy of its table
// (zero beyond the plugin's struct_size, so newer optional slots read as NULL),
// the host services handed to it, and its kernels.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "core/loader/library.h"
#include "core/loader/probe.h"
#include "core/ops/kernel_registry.h"
#include "core/util/status.h"
#include "oar/plugin.h"
#include "oar/runtime.hpp"

namespace oar::detail {

class Plugin {
 public:
  // Makes |library_path| absolute, checks that it is a regular file holding a
  // shared library for this machine (loader/library.h), and, when
  // OAR_PLUGIN_PROBE asks for it, loads it once in a child process first
  // (loader/probe.h): a plugin that crashes or hangs there is skipped. Then
  // opens it and runs every check in order: entry symbol, table
  // header, ABI major, table size, required slots, name, initialize, kernels.
  // Fills |record| with the outcome; returns nullptr when skipped. A plugin
  // whose name is already loaded (|loaded_from| gives that copy's library, or
  // "" if none) is skipped before initialize: two copies of one library share
  // its static state. With |validate| the copied table's slots are replaced by
  // the validation layer's checking wrappers (core/validate/validator.h);
  // without it the table is the plugin's own.
  static std::unique_ptr<Plugin> load(
      const std::string& library_path, PluginRecord* record,
      const std::function<std::string(const std::string&)>& loaded_from, bool validate = false);

  // Finalizes the plugin and unloads its library.
  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const oar_plugin_api_t& api() const { return api_; }
  const std::string& name() const { return name_; }
  const std::string& library_path() const { return library_path_; }
  KernelRegistry& kernels() { return kernels_; }
  // Whether api() is wrapped by the validation layer.
  bool validating() const { return validation_slot_ >= 0; }
  const KernelRegistry& kernels() const { return kernels_; }

  // Throws oar::Error carrying the plugin's reported message unless |code| is OK.
  void check(oar_status_t code, const char* operation) const {
    if (code != OAR_STATUS_OK) fail(code, operation);
  }
  [[noreturn]] void fail(oar_status_t code, const char* operation) const;
  // The same, as a Status.
  Status status(oar_status_t code, const char* operation) const;

 private:
  Plugin() = default;

  // load() once the file is checked: dlopen onwards, telling |step| (if set)
  // each step it reaches.
  static std::unique_ptr<Plugin> load_checked(
      const std::string& library_path, PluginRecord* record,
      const std::function<std::string(const std::string&)>& loaded_from, bool validate,
      const loader::ProbeStep& step);

  loader::SharedLibrary library_;
  oar_plugin_api_t api_{};
  oar_host_services_t host_{};
  std::string name_;
  std::string library_path_;
  bool initialized_ = false;
  int validation_slot_ = -1;  // the validator's slot, or -1 when unchecked
  KernelRegistry kernels_;
};

// The names of the table slots a plugin must fill (docs/abi.md lists them).
const std::vector<std::pair<const char*, size_t>>& required_slots();

}  // namespace oar::detail
