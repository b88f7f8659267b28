// `oar`: lists the plugins OAR finds and the devices they serve, like clinfo
// or nvidia-smi. Exit 0 even with no devices: an empty machine is not an error.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "cli/describe.h"
#include "core/ops/decompositions/decompose.h"
#include "oar/oar.hpp"
#include "oar/ops.hpp"

namespace {

using nlohmann::json;

std::string join(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text.empty() ? "-" : text;
}

json runtime_json(const oar::Runtime& runtime) {
  json plugins = json::array();
  for (const auto& record : runtime.plugins()) plugins.push_back(oar::cli::plugin_json(record));
  json devices = json::array();
  for (oar::Device* device : runtime.devices()) devices.push_back(oar::cli::device_json(*device));
  return {
      {"schema_version", oar::cli::kJsonSchemaVersion},
      {"abi_version", fmt::format("{}.{}", OAR_ABI_MAJOR, OAR_ABI_MINOR)},
      {"plugins", plugins},
      {"devices", devices},
  };
}

// Column and text limits: names and reasons come from manifests and plugin
// tables, and a row must stay a row whatever they hold.
constexpr size_t kNameColumn = 24;
constexpr size_t kMaxName = 64;
constexpr size_t kMaxText = 2048;

std::string shown(const std::string& text, size_t max_bytes = kMaxText) {
  return oar::cli::for_terminal(text, max_bytes);
}

void print_list(const oar::Runtime& runtime) {
  size_t loaded = 0;
  for (const auto& record : runtime.plugins()) loaded += record.state == oar::PluginState::kLoaded;
  fmt::print("Plugins: {} found, {} loaded\n", runtime.plugins().size(), loaded);
  size_t width = 12;
  for (const auto& r : runtime.plugins()) {
    width = std::max(width, std::min(shown(r.name, kMaxName).size(), kNameColumn));
  }
  for (const auto& r : runtime.plugins()) {
    std::string name = shown(r.name, kMaxName);
    if (r.state == oar::PluginState::kLoaded) {
      fmt::print("  {:<{}} loaded   v{} ({}), ABI {}.{}, {} device(s), {} kernel(s)\n", name, width,
                 shown(r.version, kMaxName), shown(r.vendor, kMaxName), r.abi_major, r.abi_minor,
                 r.device_count, r.kernel_count);
      fmt::print("  {:<{}}          {}\n", "", width, shown(r.library_path));
    } else {
      fmt::print("  {:<{}} skipped  {}: {}\n", name, width, oar::cli::status_text(r.code),
                 shown(r.reason));
      fmt::print("  {:<{}}          {}\n", "", width,
                 shown(r.manifest_path.empty() ? r.library_path : r.manifest_path));
    }
  }
  fmt::print("Devices: {}\n", runtime.devices().size());
  for (oar::Device* device : runtime.devices()) {
    const auto& p = device->properties();
    fmt::print("  {:<12} {} | {} | {} | {} compute units | dtypes+ {} | {}\n",
               shown(device->name(), kMaxName), shown(p.name, kMaxName),
               oar::cli::device_kind_name(p.kind), oar::cli::human_bytes(p.total_memory),
               p.compute_units, join(oar::cli::dtype_support_names(p.dtypes)),
               join(oar::cli::feature_names(p.features)));
  }
  if (runtime.devices().empty()) {
    fmt::print("  (none: no plugin found a device; OAR_PLUGIN_PATH adds manifest folders)\n");
  }
}

// For each dtype of the operator set: how many operators whose tensors all
// share one dtype (DtypeRule::kSame) have a kernel at that dtype, against
// how many the schema allows it for. Compare with the dtype claims above.
std::string kernel_coverage(const oar::Device& device) {
  std::string text;
  for (DLDataType dtype : oar::ops::dtypes_in(oar::ops::kAll | oar::ops::kSmallInts)) {
    int allowed = 0, present = 0;
    for (const oar::ops::OpSchema& schema : oar::ops::schemas()) {
      if (schema.rule != oar::ops::DtypeRule::kSame ||
          (schema.dtypes & oar::ops::dtype_bit(dtype)) == 0) {
        continue;
      }
      size_t inputs = 0;
      for (const auto& spec : schema.inputs) inputs += spec.optional ? 0 : 1;
      ++allowed;
      present += device.has_kernel(schema.name, std::vector<DLDataType>(inputs, dtype),
                                   std::vector<DLDataType>(schema.outputs.size(), dtype));
    }
    if (allowed > 0) {
      text += fmt::format("{}{} {}/{}", text.empty() ? "" : ", ", oar::dtype_name(dtype), present,
                          allowed);
    }
  }
  return text;
}

// Which operators run decomposed on |device|, with the dtypes they do so in:
// "softmax (f16, bf16), tril (f32)". The dtypes are the schema's that the
// device serves (f32 and the integers always, f16/bf16/f64 where claimed); a
// dtype runs natively when some kernel of the operator takes it as its data
// input (the first input that is neither the index nor where's condition,
// unless the index is all there is).
std::string decomposed_operators(const oar::Device& device) {
  using oar::operator==;
  const auto mode = oar::decompose::device_mode(device);
  if (mode == oar::decompose::Mode::kOff) return "off (OAR_DECOMPOSE=0)";
  const uint32_t claims = device.properties().dtypes;
  uint32_t served = oar::ops::kF32 | oar::ops::kInts | oar::ops::kBool | oar::ops::kSmallInts;
  if (claims & OAR_DTYPE_SUPPORT_F16) served |= oar::ops::kF16;
  if (claims & OAR_DTYPE_SUPPORT_BF16) served |= oar::ops::kBF16;
  if (claims & OAR_DTYPE_SUPPORT_F64) served |= oar::ops::kF64;
  std::string text;
  for (const std::string& op : oar::decompose::decomposed_operators()) {
    const oar::ops::OpSchema* schema = oar::ops::find_schema(op);
    size_t data_input = schema->rule == oar::ops::DtypeRule::kWhere ? 1 : 0;
    if (int(data_input) == schema->index_input) ++data_input;
    if (data_input >= schema->inputs.size()) data_input = 0;  // one_hot: the index is the data
    const auto kernels = device.kernel_signatures(op);
    std::vector<std::string> dtypes;
    for (DLDataType dtype : oar::ops::dtypes_in(schema->dtypes & served)) {
      const bool native =
          mode != oar::decompose::Mode::kForce &&
          std::any_of(kernels.begin(), kernels.end(), [&](const auto& kernel) {
            return data_input < kernel.inputs.size() && kernel.inputs[data_input] == dtype;
          });
      if (!native) dtypes.push_back(oar::dtype_name(dtype));
    }
    if (!dtypes.empty()) {
      text += fmt::format("{}{} ({})", text.empty() ? "" : ", ", op, fmt::join(dtypes, ", "));
    }
  }
  return text.empty() ? "none: every decomposable operator has a kernel" : text;
}

// "add(f32,f32)->(f32)" or "add(f32, f32) -> (f32)": the operator and the
// dtypes of its inputs, then of its outputs.
bool parse_signature(std::string text, std::string* op, std::vector<DLDataType>* inputs,
                     std::vector<DLDataType>* outputs) {
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  size_t open = text.find('('), close = text.find(')'), arrow = text.find("->(");
  if (open == std::string::npos || close == std::string::npos || arrow != close + 1 ||
      text.back() != ')' || open == 0) {
    return false;
  }
  *op = text.substr(0, open);
  auto list = [](const std::string& items, std::vector<DLDataType>* out) {
    size_t start = 0;
    while (start < items.size()) {
      size_t comma = items.find(',', start);
      if (comma == std::string::npos) comma = items.size();
      DLDataType dtype{};
      if (!oar::parse_dtype(items.substr(start, comma - start), &dtype)) return false;
      out->push_back(dtype);
      start = comma + 1;
    }
    return true;
  };
  return list(text.substr(open + 1, close - open - 1), inputs) &&
         list(text.substr(arrow + 3, text.size() - arrow - 4), outputs);
}

void print_info(oar::Device& device) {
  const auto& p = device.properties();
  auto row = [](const char* key, const std::string& value) {
    fmt::print("  {:<22} {}\n", key, value);
  };
  fmt::print("{}\n", shown(device.name()));
  row("name", shown(p.name));
  row("vendor", shown(p.vendor));
  row("driver_version", shown(p.driver_version));
  row("plugin", shown(device.plugin_name()));
  row("kind", oar::cli::device_kind_name(p.kind));
  row("dlpack_device_type", std::to_string(p.dlpack_device_type));
  row("total_memory",
      fmt::format("{} ({} bytes)", oar::cli::human_bytes(p.total_memory), p.total_memory));
  row("max_allocation_size",
      fmt::format("{} ({} bytes)", oar::cli::human_bytes(p.max_allocation_size),
                  p.max_allocation_size));
  row("min_alignment", fmt::format("{} bytes", p.min_alignment));
  row("memory_kinds", join(oar::cli::memory_kind_names(p.memory_kinds)));
  row("dtypes (beyond f32/int)", join(oar::cli::dtype_support_names(p.dtypes)));
  // The hardware's arithmetic, apart from the kernels' claims above.
  row("native arithmetic", oar::cli::native_dtypes_text(p, device.api().abi_minor));
  row("features", join(oar::cli::feature_names(p.features)));
  row("compute_units", std::to_string(p.compute_units));
  row("kernels (same dtype)", kernel_coverage(device));
  // Operators that run through their decomposition into primitives on this
  // device (docs/ops.md, "Primitives and decompositions"), per dtype the
  // device serves: those without a kernel taking that dtype as its data input,
  // or all of them where decomposition is forced.
  row("decomposed", decomposed_operators(device));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"oar: list OAR plugins and devices"};
  app.require_subcommand(1);
  bool as_json = false;
  auto* list = app.add_subcommand("list", "every plugin found (loaded, or why skipped) and device");
  list->add_flag("--json", as_json, "machine-readable output (schema_version says its form)");
  std::string device_name;
  auto* info = app.add_subcommand("info", "every property of one device");
  info->add_option("DEVICE", device_name, "a device name such as cpu:0, or a plugin name")
      ->required();
  info->add_flag("--json", as_json, "machine-readable output");
  std::string kernel_signature;
  info->add_option("--kernel", kernel_signature,
                   "only say whether the device has a kernel for a signature such as "
                   "'add(f32,f32)->(f32)' (exit 0: yes, 2: no)");
  CLI11_PARSE(app, argc, argv);

  // Each plugin is loaded once in a child process first, so that one that
  // crashes or hangs while loading is named in the list instead of killing
  // it (docs/abi.md, "Probing"). OAR_PLUGIN_PROBE=0 turns that off.
  setenv("OAR_PLUGIN_PROBE", "1", /*overwrite=*/0);
  try {
    oar::Runtime runtime;
    if (*list) {
      if (as_json) {
        std::cout << oar::cli::dump_json(runtime_json(runtime)) << "\n";
      } else {
        print_list(runtime);
      }
      return 0;
    }
    oar::Device& device = runtime.device(device_name);
    if (!kernel_signature.empty()) {
      std::string op;
      std::vector<DLDataType> inputs, outputs;
      if (!parse_signature(kernel_signature, &op, &inputs, &outputs)) {
        std::fprintf(stderr,
                     "oar: --kernel takes op(dtypes)->(dtypes), e.g. add(f32,f32)->(f32)\n");
        return 1;
      }
      bool found = device.has_kernel(op, inputs, outputs);
      fmt::print("{} {}: {}\n", shown(device.name()), shown(kernel_signature),
                 found ? "kernel registered" : "no kernel");
      return found ? 0 : 2;
    }
    if (as_json) {
      json document = {{"schema_version", oar::cli::kJsonSchemaVersion},
                       {"device", oar::cli::device_json(device)}};
      std::cout << oar::cli::dump_json(document) << "\n";
    } else {
      print_info(device);
    }
    return 0;
  } catch (const oar::Error& e) {
    std::fprintf(stderr, "oar: %s\n", shown(e.what()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "oar: %s\n", shown(e.what()).c_str());
    return 1;
  }
}
