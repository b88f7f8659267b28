// Plugins and devices as text and as JSON, shared by the command-line tools
// so that `oar list --json` and certification reports describe a device alike.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "oar/device.h"
#include "oar/runtime.hpp"

namespace oar::cli {

// Bumped when a field is renamed or removed; adding fields keeps it.
inline constexpr int kJsonSchemaVersion = 1;

std::vector<std::string> feature_names(uint32_t features);
std::vector<std::string> memory_kind_names(uint32_t kinds);
std::vector<std::string> dtype_support_names(uint32_t dtypes);
const char* device_kind_name(int32_t kind);
// "16.0 GiB"
std::string human_bytes(uint64_t bytes);

nlohmann::json properties_json(const oar_device_properties_t& properties);
nlohmann::json plugin_json(const PluginRecord& record);
nlohmann::json device_json(Device& device);

}  // namespace oar::cli
