// Plugins and devices as text and as JSON, shared by the command-line tools
// so that `oar list --json` and certification reports describe a device alike.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "oar/device.h"
#include "oar/plugin.h"
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
// A status name, with its number when it is none of the canonical codes.
std::string status_text(oar_status_t code);
// |text| for a terminal: control characters and bytes that are not UTF-8 as
// "\xNN", cut at |max_bytes| with a note of the full length. A name from a
// manifest or a plugin table can be anything (a 50 MiB name once padded
// every row of `oar list` to its width).
std::string for_terminal(std::string_view text, size_t max_bytes);
// Serialized JSON in which text that is not UTF-8 (a Latin-1 file name, a
// plugin's name) is replaced, never an exception.
std::string dump_json(const nlohmann::json& document);

// The native_dtypes field (ABI 1.1), which a plugin of ABI 1.0 does not
// write: its names, "none beyond f32/int" when empty, or "not reported" for
// a plugin of |plugin_abi_minor| 0. In JSON a list, or null when not reported.
std::string native_dtypes_text(const oar_device_properties_t& properties,
                               uint32_t plugin_abi_minor);
nlohmann::json native_dtypes_json(const oar_device_properties_t& properties,
                                  uint32_t plugin_abi_minor);

// |plugin_abi_minor|: of the plugin that filled |properties| (fields a plugin
// of an older minor does not write are null).
nlohmann::json properties_json(const oar_device_properties_t& properties,
                               uint32_t plugin_abi_minor = OAR_ABI_MINOR);
nlohmann::json plugin_json(const PluginRecord& record);
nlohmann::json device_json(Device& device);

}  // namespace oar::cli
