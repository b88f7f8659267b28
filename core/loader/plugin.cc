#include "core/loader/plugin.h"

#include <cstring>
#include <filesystem>

#include "core/loader/host_services.h"
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
  record->library_path = library_path;
  if (record->name.empty()) {
    // Until the table names it, a library is known by its file name.
    std::string stem = std::filesystem::path(library_path).stem().string();
    const std::string prefix = "liboar_plugin_";
    if (stem.compare(0, prefix.size(), prefix) == 0 && stem.size() > prefix.size()) {
      stem = stem.substr(prefix.size());
    }
    record->name = stem;
  }

  std::error_code ignored;
  if (!std::filesystem::exists(library_path, ignored)) {
    skip(record, OAR_STATUS_NOT_FOUND,
         "library file missing: " + library_path + " (fix the manifest's library_path)");
    return nullptr;
  }
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
  plugin->name_ = plugin->api_.name;
  plugin->library_path_ = library_path;
  if (!record->manifest_path.empty() && record->name != plugin->name_) {
    skip(record, OAR_STATUS_FAILED_PRECONDITION,
         "the manifest names plugin '" + record->name + "' but the library calls itself '" +
             plugin->name_ + "' (make them agree)");
    return nullptr;
  }
  if (std::string other = loaded_from(plugin->name_); !other.empty()) {
    skip(record, OAR_STATUS_ALREADY_EXISTS,
         "a plugin named '" + plugin->name_ + "' is already loaded from " + other +
             "; this copy (" + library_path + ") is ignored (remove one of them from the search)");
    return nullptr;
  }
  record->name = plugin->name_;
  record->version = plugin->api_.version != nullptr ? plugin->api_.version : "";
  record->vendor = plugin->api_.vendor != nullptr ? plugin->api_.vendor : "";
  plugin->library_ = std::move(library).value();

  plugin->host_ = make_host_services(plugin.get());
  oar_status_t code = plugin->api_.initialize(&plugin->host_);
  if (code != OAR_STATUS_OK) {
    skip(record, code,
         std::string("initialize failed with ") + status_name(code) + ": " +
             take_reported_error(plugin.get()));
    return nullptr;  // the library closes; finalize is not called after a failed initialize
  }
  plugin->initialized_ = true;
  if (validate) {
    plugin->validation_slot_ = validate::install(&plugin->api_, plugin->host_, plugin->name_);
  }

  if (plugin->api_.register_kernels != nullptr) {
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
  code = plugin->api_.device_count(&count);
  if (code != OAR_STATUS_OK) {
    skip(record, code,
         std::string("device_count failed with ") + status_name(code) + ": " +
             take_reported_error(plugin.get()));
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
