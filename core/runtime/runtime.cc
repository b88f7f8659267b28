#include "oar/runtime.hpp"

#include <algorithm>

#include "core/loader/discovery.h"
#include "core/loader/environment.h"
#include "core/loader/host_services.h"
#include "core/loader/plugin.h"
#include "core/runtime/plugin_registry.h"
#include "core/trace/tracer.h"

namespace oar {

Runtime::Runtime(RuntimeOptions options) {
  std::string filter_text = options.device_filter;
  std::string filter_source = "RuntimeOptions::device_filter";
  if (options.use_environment) {
    if (auto env = loader::get_environment("OAR_DEVICES")) {
      filter_text = *env;
      filter_source = "OAR_DEVICES";
    }
    if (loader::environment_flag("OAR_VALIDATE", false)) options.validate = true;
    if (auto trace = loader::get_environment("OAR_TRACE")) {
      detail::Tracer::instance().start(*trace);
      tracing_ = true;
    }
  }
  // A typo must not hide every device in silence: each entry that means
  // nothing, or matches no device, is named in a warning.
  std::vector<std::string> filter_problems;
  loader::DeviceFilter filter(filter_text, filter_source, &filter_problems);
  for (const std::string& problem : filter_problems) {
    detail::log_line(OAR_LOG_LEVEL_WARNING, "core", problem);
  }
  for (loader::Candidate& candidate : loader::discover(options)) {
    PluginRecord record;
    record.name = candidate.name;
    record.manifest_path = candidate.manifest_path;
    record.library_path = candidate.library_path;
    if (!candidate.status.ok()) {
      record.code = candidate.status.code();
      record.reason = candidate.status.message();
      records_.push_back(std::move(record));
      continue;
    }
    auto loaded_from = [&](const std::string& name) -> std::string {
      for (const auto& p : plugins_) {
        if (p->name() == name) return p->library_path();
      }
      return {};
    };
    if (std::string other = loaded_from(record.name); !other.empty()) {
      record.code = OAR_STATUS_ALREADY_EXISTS;
      record.reason = "a plugin named '" + record.name + "' is already loaded from " + other +
                      "; this copy (" +
                      (record.manifest_path.empty() ? record.library_path : record.manifest_path) +
                      ") is ignored (remove one of them from the search)";
      records_.push_back(std::move(record));
      continue;
    }
    detail::PluginRef plugin =
        detail::acquire_plugin(candidate.library_path, &record, loaded_from, options.validate);
    if (plugin != nullptr) {
      for (int32_t i = 0; i < record.device_count; ++i) {
        oar_device_properties_t properties{};
        properties.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
        oar_status_t code = plugin->api().device_properties(i, &properties);
        if (code != OAR_STATUS_OK) {
          detail::log_line(OAR_LOG_LEVEL_WARNING, plugin->name(),
                           "device " + std::to_string(i) + " skipped: " +
                               plugin->status(code, "device_properties").to_string());
          continue;
        }
        properties.name[OAR_DEVICE_NAME_SIZE - 1] = '\0';
        properties.vendor[OAR_DEVICE_TEXT_SIZE - 1] = '\0';
        properties.driver_version[OAR_DEVICE_TEXT_SIZE - 1] = '\0';
        const uint32_t host_visible = OAR_MEMORY_KIND_HOST_PINNED | OAR_MEMORY_KIND_UNIFIED;
        if ((properties.memory_kinds & host_visible) &&
            plugin->api().memory_host_address == nullptr) {
          detail::log_line(OAR_LOG_LEVEL_WARNING, plugin->name(),
                           "device " + std::to_string(i) +
                               " lists host-visible memory but the plugin has no "
                               "memory_host_address slot; offering device memory only");
          properties.memory_kinds &= ~host_visible;
        }
        auto device = std::make_unique<Device>(plugin.get(), i, properties);
        if (filter.admits(plugin->name(), i)) devices_.push_back(device.get());
        owned_devices_.push_back(std::move(device));
      }
      plugins_.push_back(std::move(plugin));
    }
    records_.push_back(std::move(record));
  }
  std::vector<std::string> found;
  for (const auto& device : owned_devices_) found.push_back(device->name());
  for (const std::string& warning : filter.unmatched(found)) {
    detail::log_line(OAR_LOG_LEVEL_WARNING, "core", warning);
  }
}

Runtime::~Runtime() {
  // Devices first (each releases its leftovers), then finalize and unload.
  for (auto& device : owned_devices_) device->close();
  owned_devices_.clear();
  devices_.clear();
  while (!plugins_.empty()) plugins_.pop_back();
  if (tracing_) detail::Tracer::instance().stop();
}

Device* Runtime::find_device(std::string_view name) const {
  for (Device* device : devices_) {
    if (device->name() == name) return device;
  }
  for (Device* device : devices_) {
    if (device->plugin_name() == name) return device;
  }
  return nullptr;
}

Device& Runtime::device(std::string_view name) const {
  if (Device* device = find_device(name)) return *device;
  std::string known;
  for (Device* device : devices_) known += (known.empty() ? "" : ", ") + device->name();
  throw Error(OAR_STATUS_NOT_FOUND, "no device '" + std::string(name) + "'; devices here: " +
                                        (known.empty() ? "none (run `oar list`)" : known));
}

}  // namespace oar
