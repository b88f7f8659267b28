#include "core/loader/plugin.h"

#include <cstring>
#include <filesystem>

#include "core/loader/host_services.h"
#include "core/loader/manifest.h"
#include "core/loader/probe.h"
#include "core/loader/text.h"
#include "core/util/status.h"
#include "core/validate/validator.h"

namespace oar::detail {
namespace {

#define OAR_SLOT(name) \
  { #name, offsetof(oar_plugin_api_t, name) }

// The table size of ABI 1.0; later minors only grow it.
constexpr size_t kAbi10TableSize = OAR_STRUCT_SIZE(oar_plugin_api_t, comm_group_end);

void skip(PluginRecord* record, oar_status_t code, std::string reason) {
  record->state = PluginState::kSkipped;
  record->code = code;
  record->reason = std::move(reason);
}

bool slot_is_null(const oar_plugin_api_t& api, size_t offset) {
  void (*slot)(void) = nullptr;
  std::memcpy(&slot, reinterpret_cast<const char*>(&api) + offset, sizeof(slot));
  return slot == nullptr;
}

}  // namespace

const std::vector<std::pair<const char*, size_t>>& required_slots() {
  static const std::vector<std::pair<const char*, size_t>> slots = {
      OAR_SLOT(initialize),         OAR_SLOT(finalize),          OAR_SLOT(device_count),
      OAR_SLOT(device_properties),  OAR_SLOT(device_open),       OAR_SLOT(device_close),
      OAR_SLOT(device_synchronize), OAR_SLOT(stream_create),     OAR_SLOT(stream_destroy),
      OAR_SLOT(stream_synchronize), OAR_SLOT(stream_query),      OAR_SLOT(stream_wait_event),
      OAR_SLOT(event_create),       OAR_SLOT(event_destroy),     OAR_SLOT(event_record),
      OAR_SLOT(event_query),        OAR_SLOT(event_synchronize), OAR_SLOT(memory_allocate),
      OAR_SLOT(memory_free),        OAR_SLOT(memory_copy_h2d),   OAR_SLOT(memory_copy_d2h),
      OAR_SLOT(memory_copy_d2d),    OAR_SLOT(memory_fill),
  };
  return slots;
}

std::unique_ptr<Plugin> Plugin::load(
    const std::string& library_path, PluginRecord* record,
    const std::function<std::string(const std::string&)>& loaded_from, bool validate) {
  // The exact file checked is the file opened: dlopen given a bare name
  // ("liboar_plugin_x.so") would search the system's library paths instead.
  std::string path = library_path;
  std::error_code error;
  std::filesystem::path absolute = std::filesystem::absolute(library_path, error);
  if (!error) path = absolute.lexically_normal().string();
  record->library_path = path;
  if (record->name.empty()) {
    // Until the table names it, a library is known by its file name.
    std::string stem = std::filesystem::path(path).stem().string();
    const std::string prefix = "liboar_plugin_";
    if (stem.compare(0, prefix.size(), prefix) == 0 && stem.size() > prefix.size()) {
      stem = stem.substr(prefix.size());
    }
    record->name = stem;
  }

  // A regular file holding a shared library for this machine, or say what it is.
  if (Status file = loader::check_library_file(path); !file.ok()) {
    skip(record, file.code(), file.message());
    return nullptr;
  }

  if (loader::ProbeSettings probe = loader::probe_settings(); probe.enabled) {
    Status probed = loader::run_in_probe_process(
        "plugin '" + loader::printable(record->name) + "' (" + loader::printable(path) + ")",
        [&](const loader::ProbeStep& step) {
          PluginRecord scratch = *record;
          std::unique_ptr<Plugin> plugin = load_checked(path, &scratch, loaded_from, false, step);
          if (plugin == nullptr) return;
          step("device_properties");
          for (int32_t i = 0; i < scratch.device_count; ++i) {
            oar_device_properties_t properties{};
            properties.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
            (void)plugin->api_.device_properties(i, &properties);
          }
          step("finalize");
          plugin.reset();
        },
        probe.timeout);
    if (!probed.ok()) {
      skip(record, probed.code(), probed.message());
      return nullptr;
    }
  }
  return load_checked(path, record, loaded_from, validate, {});
}

std::unique_ptr<Plugin> Plugin::load_checked(
    const std::string& library_path, PluginRecord* record,
    const std::function<std::string(const std::string&)>& loaded_from, bool validate,
    const loader::ProbeStep& step) {
  auto reached = [&](const char* name) {
    if (step) step(name);
  };
  reached("dlopen");
  auto library = loader::SharedLibrary::open(library_path);
  if (!library.ok()) {
    skip(record, library.status().code(), library.status().message());
    return nullptr;
  }
  auto entry = library.value().symbol(OAR_PLUGIN_ENTRY_SYMBOL);
  if (!entry.ok()) {
    skip(record, entry.status().code(), entry.status().message());
    return nullptr;
  }
  auto query = reinterpret_cast<oar_plugin_query_fn>(entry.value());
  reached("oar_plugin_query");
  const oar_plugin_api_t* table = query(OAR_ABI_MAJOR, OAR_ABI_MINOR);
  if (table == nullptr) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "oar_plugin_query returned no table for host ABI " + std::to_string(OAR_ABI_MAJOR) + "." +
             std::to_string(OAR_ABI_MINOR));
    return nullptr;
  }
  // Only the header is trusted before its size and version are checked.
  if (table->struct_size < OAR_PLUGIN_API_HEADER_SIZE) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "plugin table struct_size " + std::to_string(table->struct_size) +
             " is too small to hold even the table header (" +
             std::to_string(OAR_PLUGIN_API_HEADER_SIZE) + " bytes): not an OAR plugin table");
    return nullptr;
  }
  record->abi_major = table->abi_major;
  record->abi_minor = table->abi_minor;
  if (table->abi_major != OAR_ABI_MAJOR) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "ABI major mismatch: the plugin speaks ABI " + std::to_string(table->abi_major) + "." +
             std::to_string(table->abi_minor) + ", this OAR speaks " +
             std::to_string(OAR_ABI_MAJOR) + "." + std::to_string(OAR_ABI_MINOR) +
             " (rebuild the plugin against OAR " + std::to_string(OAR_ABI_MAJOR) + ".x headers)");
    return nullptr;
  }
  // Every 1.x table holds at least ABI 1.0's slots.
  if (table->struct_size < kAbi10TableSize) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "plugin table struct_size " + std::to_string(table->struct_size) +
             " is smaller than ABI 1.0's " + std::to_string(kAbi10TableSize) +
             " bytes (set struct_size = OAR_PLUGIN_API_STRUCT_SIZE)");
    return nullptr;
  }

  std::unique_ptr<Plugin> plugin(new Plugin());
  std::memcpy(&plugin->api_, table, std::min<size_t>(table->struct_size, sizeof(plugin->api_)));
  plugin->api_.struct_size = std::min<size_t>(table->struct_size, sizeof(plugin->api_));
  std::string missing;
  for (const auto& [name, offset] : required_slots()) {
    if (slot_is_null(plugin->api_, offset))
      missing += std::string(missing.empty() ? "" : ", ") + name;
  }
  if (!missing.empty()) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "required slot(s) missing: " + missing + " (docs/abi.md lists the required slots)");
    return nullptr;
  }
  if (plugin->api_.name == nullptr || plugin->api_.name[0] == '\0') {
    skip(record, OAR_STATUS_FAILED_PRECONDITION, "the plugin table has no name");
    return nullptr;
  }
  size_t name_length = strnlen(plugin->api_.name, loader::kMaxPluginNameBytes + 1);
  if (name_length > loader::kMaxPluginNameBytes) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "the plugin table's name is longer than " + std::to_string(loader::kMaxPluginNameBytes) +
             " bytes (it starts \"" + loader::clipped(std::string_view(plugin->api_.name, 32), 32) +
             "\")");
    return nullptr;
  }
  std::string table_name(plugin->api_.name, name_length);
  if (loader::printable(table_name) != table_name) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "the plugin table's name \"" + loader::printable(table_name) +
             "\" has control characters or bytes that are not UTF-8");
    return nullptr;
  }
  plugin->name_ = table_name;
  plugin->library_path_ = library_path;
  if (!record->manifest_path.empty() && record->name != plugin->name_) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "the manifest names plugin '" + loader::printable(record->name) +
             "' but the library calls itself '" + plugin->name_ + "' (make them agree)");
    return nullptr;
  }
  if (std::string other = loaded_from(plugin->name_); !other.empty()) {
    skip(record, OAR_STATUS_ALREADY_EXISTS,
         "a plugin named '" + plugin->name_ + "' is already loaded from " +
             loader::printable(other) + "; this copy (" + loader::printable(library_path) +
             ") is ignored (remove one of them from the search)");
    return nullptr;
  }
  record->name = plugin->name_;
  // Free text from the plugin: kept printable and short.
  auto text = [](const char* value) {
    return value != nullptr ? loader::clipped(std::string_view(value, strnlen(value, 1 << 20)), 256)
                            : std::string();
  };
  record->version = text(plugin->api_.version);
  record->vendor = text(plugin->api_.vendor);
  plugin->library_ = std::move(library).value();

  plugin->host_ = make_host_services(plugin.get());
  reached("initialize");
  oar_status_t code = plugin->api_.initialize(&plugin->host_);
  if (code != OAR_STATUS_OK) {
    skip(record, code,
         "initialize failed with " + oar::status_text(code) + ": " +
             loader::printable(take_reported_error(plugin.get())));
    return nullptr;  // the library closes; finalize is not called after a failed initialize
  }
  plugin->initialized_ = true;
  if (validate) {
    plugin->validation_slot_ = validate::install(&plugin->api_, plugin->host_, plugin->name_);
  }

  if (plugin->api_.register_kernels != nullptr) {
    reached("register_kernels");
    oar_kernel_registrar_t registrar = plugin->kernels_.registrar();
    code = plugin->api_.register_kernels(&registrar);
    if (code != OAR_STATUS_OK) {
      log_line(OAR_LOG_LEVEL_WARNING, plugin->name_,
               "register_kernels failed, keeping the kernels registered before the failure: " +
                   plugin->status(code, "register_kernels").to_string());
    }
  }
  record->kernel_count = plugin->kernels_.size();

  int32_t count = 0;
  reached("device_count");
  code = plugin->api_.device_count(&count);
  if (code != OAR_STATUS_OK) {
    skip(record, code,
         "device_count failed with " + oar::status_text(code) + ": " +
             loader::printable(take_reported_error(plugin.get())));
    return nullptr;
  }
  if (count < 0) {
    skip(record, OAR_STATUS_INTERNAL,
         "device_count returned a negative count (" + std::to_string(count) + ")");
    return nullptr;
  }
  record->device_count = count;
  record->state = PluginState::kLoaded;
  record->code = OAR_STATUS_OK;
  record->reason.clear();
  return plugin;
}

Plugin::~Plugin() {
  if (initialized_) {
    oar_status_t code = api_.finalize();
    if (code != OAR_STATUS_OK) {
      log_line(OAR_LOG_LEVEL_WARNING, name_,
               "finalize failed: " + status(code, "finalize").to_string());
    }
  }
  validate::uninstall(validation_slot_);
}

void Plugin::fail(oar_status_t code, const char* operation) const {
  throw Error(code, std::string(operation) + ": " + take_reported_error(this), name_);
}

Status Plugin::status(oar_status_t code, const char* operation) const {
  if (code == OAR_STATUS_OK) return Status();
  return Status(code, std::string(operation) + ": " + take_reported_error(this));
}

}  // namespace oar::detail
