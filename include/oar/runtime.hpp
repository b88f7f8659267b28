// oar::Runtime: the entry point of the framework-facing C++ API. It finds
// plugins through their manifests, loads each one (or records exactly why it
// did not), and exposes every device of every loaded plugin.
//
// Plugin search order: the install prefix (<prefix>/share/oar/plugins.d, found
// relative to liboar itself), RuntimeOptions::plugin_paths, then the folders in
// OAR_PLUGIN_PATH. OAR_PLUGINS (or RuntimeOptions::plugin_files) lists exact
// manifests or libraries and replaces the search. OAR_DEVICES ("cpu:0,sim")
// limits which devices are visible. OAR_VALIDATE=1 turns on the validation
// layer (RuntimeOptions::validate). The environment is ignored in setuid
// processes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "oar/device.hpp"
#include "oar/error.hpp"

namespace oar {

namespace detail {
class Plugin;
class PluginRef;
}  // namespace detail

enum class PluginState { kLoaded, kSkipped };

// What happened to one plugin the runtime found.
struct PluginRecord {
  std::string name;           // from the manifest, else the library file name
  std::string manifest_path;  // empty when given as a library
  std::string library_path;
  PluginState state = PluginState::kSkipped;
  oar_status_t code = OAR_STATUS_OK;  // why it was skipped
  std::string reason;                 // names the cause and the fix
  std::string version;
  std::string vendor;
  uint32_t abi_major = 0;
  uint32_t abi_minor = 0;
  int device_count = 0;
  size_t kernel_count = 0;
};

struct RuntimeOptions {
  // Read OAR_PLUGIN_PATH, OAR_PLUGINS and OAR_DEVICES.
  bool use_environment = true;
  // Search <prefix>/share/oar/plugins.d.
  bool search_install_prefix = true;
  // Folders of manifests, searched after the install prefix.
  std::vector<std::string> plugin_paths;
  // Exact manifests (*.json) or libraries (*.so); when not empty, only these.
  std::vector<std::string> plugin_files;
  // Visible devices, e.g. "cpu:0,sim"; empty shows all. OAR_DEVICES overrides.
  std::string device_filter;
  // Check every plugin call for misuse (freed or foreign handles, out-of-range
  // copies, another device's memory, unrecorded events, leaks) before it
  // reaches the plugin; see docs/runtime.md. OAR_VALIDATE=1 turns it on too.
  // Off, the plugin's table is called directly: no cost.
  bool validate = false;
};

class Runtime {
 public:
  explicit Runtime(RuntimeOptions options = {});
  // Closes every device (releasing what the framework forgot), finalizes and
  // unloads the plugins, in that order.
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Every plugin found, loaded or skipped, in search order.
  const std::vector<PluginRecord>& plugins() const { return records_; }
  // Every visible device of every loaded plugin.
  const std::vector<Device*>& devices() const { return devices_; }
  // "cpu:0", or "cpu" for the plugin's first device; nullptr when absent.
  Device* find_device(std::string_view name) const;
  // Like find_device; throws oar::Error NOT_FOUND listing the devices there are.
  Device& device(std::string_view name) const;

 private:
  std::vector<PluginRecord> records_;
  // Uses of plugin instances, shared with other live runtimes that loaded the
  // same library (docs/abi.md, "Two runtimes in one process").
  std::vector<detail::PluginRef> plugins_;
  std::vector<std::unique_ptr<Device>> owned_devices_;
  std::vector<Device*> devices_;
  bool tracing_ = false;  // this runtime started the OAR_TRACE writer
};

}  // namespace oar
