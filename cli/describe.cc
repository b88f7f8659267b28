#include "cli/describe.h"

#include <fmt/format.h>

#include "core/loader/text.h"
#include "core/util/status.h"
#include "oar/device.hpp"
#include "oar/error.hpp"

namespace oar::cli {
namespace {

template <typename Names>
std::vector<std::string> bits(uint32_t value, const Names& names) {
  std::vector<std::string> result;
  for (const auto& [bit, name] : names) {
    if (value & bit) result.emplace_back(name);
  }
  return result;
}

}  // namespace

std::vector<std::string> feature_names(uint32_t features) {
  static const std::pair<uint32_t, const char*> names[] = {
      {OAR_DEVICE_FEATURE_TIMING_EVENTS, "timing_events"},
      {OAR_DEVICE_FEATURE_PEER_ACCESS, "peer_access"},
      {OAR_DEVICE_FEATURE_COLLECTIVES, "collectives"},
      {OAR_DEVICE_FEATURE_ASYNC_COPIES, "async_copies"},
      {OAR_DEVICE_FEATURE_HOST_CALLBACKS, "host_callbacks"},
  };
  return bits(features, names);
}

std::vector<std::string> memory_kind_names(uint32_t kinds) {
  static const std::pair<uint32_t, const char*> names[] = {
      {OAR_MEMORY_KIND_DEVICE, "device"},
      {OAR_MEMORY_KIND_HOST_PINNED, "host_pinned"},
      {OAR_MEMORY_KIND_UNIFIED, "unified"},
  };
  return bits(kinds, names);
}

std::vector<std::string> dtype_support_names(uint32_t dtypes) {
  static const std::pair<uint32_t, const char*> names[] = {
      {OAR_DTYPE_SUPPORT_F16, "f16"},
      {OAR_DTYPE_SUPPORT_BF16, "bf16"},
      {OAR_DTYPE_SUPPORT_F64, "f64"},
      {OAR_DTYPE_SUPPORT_INT8_DOT, "int8_dot"},
  };
  return bits(dtypes, names);
}

const char* device_kind_name(int32_t kind) {
  switch (kind) {
    case OAR_DEVICE_KIND_CPU:
      return "cpu";
    case OAR_DEVICE_KIND_GPU:
      return "gpu";
    case OAR_DEVICE_KIND_NPU:
      return "npu";
    case OAR_DEVICE_KIND_ACCELERATOR:
      return "accelerator";
    default:
      return "other";
  }
}

std::string status_text(oar_status_t code) { return oar::status_text(code); }

std::string for_terminal(std::string_view text, size_t max_bytes) {
  return loader::clipped(text, max_bytes);
}

std::string dump_json(const nlohmann::json& document) {
  return document.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string human_bytes(uint64_t bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", value, units[unit]);
}

namespace {

// The first minor whose oar_device_properties_t has native_dtypes.
constexpr uint32_t kNativeDtypesMinor = 1;

}  // namespace

std::string native_dtypes_text(const oar_device_properties_t& p, uint32_t plugin_abi_minor) {
  if (plugin_abi_minor < kNativeDtypesMinor) return "not reported (plugin of ABI 1.0)";
  std::string text;
  for (const std::string& name : dtype_support_names(p.native_dtypes)) {
    text += (text.empty() ? "" : ", ") + name;
  }
  return text.empty() ? "none beyond f32/int" : text;
}

nlohmann::json native_dtypes_json(const oar_device_properties_t& p, uint32_t plugin_abi_minor) {
  if (plugin_abi_minor < kNativeDtypesMinor) return nullptr;
  return dtype_support_names(p.native_dtypes);
}

nlohmann::json properties_json(const oar_device_properties_t& p, uint32_t plugin_abi_minor) {
  return {
      {"name", p.name},
      {"vendor", p.vendor},
      {"driver_version", p.driver_version},
      {"kind", device_kind_name(p.kind)},
      {"dlpack_device_type", p.dlpack_device_type},
      {"total_memory", p.total_memory},
      {"max_allocation_size", p.max_allocation_size},
      {"min_alignment", p.min_alignment},
      {"memory_kinds", memory_kind_names(p.memory_kinds)},
      {"dtypes", dtype_support_names(p.dtypes)},
      {"features", feature_names(p.features)},
      {"compute_units", p.compute_units},
      {"native_dtypes", native_dtypes_json(p, plugin_abi_minor)},
  };
}

nlohmann::json plugin_json(const PluginRecord& r) {
  nlohmann::json json = {
      {"name", r.name},
      {"state", r.state == PluginState::kLoaded ? "loaded" : "skipped"},
      {"manifest", r.manifest_path},
      {"library", r.library_path},
  };
  if (r.state == PluginState::kLoaded) {
    json["version"] = r.version;
    json["vendor"] = r.vendor;
    json["abi_version"] = fmt::format("{}.{}", r.abi_major, r.abi_minor);
    json["device_count"] = r.device_count;
    json["kernel_count"] = r.kernel_count;
  } else {
    json["code"] = status_text(r.code);
    json["reason"] = r.reason;
  }
  return json;
}

nlohmann::json device_json(Device& device) {
  nlohmann::json json = {
      {"name", device.name()},
      {"plugin", device.plugin_name()},
      {"index", device.index()},
      {"properties", properties_json(device.properties(), device.api().abi_minor)},
  };
  return json;
}

}  // namespace oar::cli
