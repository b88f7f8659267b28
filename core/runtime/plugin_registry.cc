#include "core/runtime/plugin_registry.h"

#include <sys/stat.h>

#include <memory>
#include <mutex>
#include <vector>

#include "core/loader/host_services.h"
#include "core/loader/plugin.h"

namespace oar::detail {
namespace {

struct Entry {
  bool has_identity = false;  // false if the file could not be stat'ed: never shared
  dev_t device = 0;
  ino_t inode = 0;
  std::unique_ptr<Plugin> plugin;
  PluginRecord record;  // as the first load filled it
  int users = 0;
};

struct Registry {
  // Held while a plugin loads or unloads, so that a library is never
  // initialized again while its finalize runs (or before it returned).
  std::mutex mutex;
  std::vector<Entry> entries;
};

Registry& registry() {
  static Registry* instance = new Registry();  // plugins may outlive static teardown
  return *instance;
}

void skip(PluginRecord* record, oar_status_t code, std::string reason) {
  record->state = PluginState::kSkipped;
  record->code = code;
  record->reason = std::move(reason);
}

}  // namespace

PluginRef acquire_plugin(const std::string& library_path, PluginRecord* record,
                         const std::function<std::string(const std::string&)>& loaded_from,
                         bool validate) {
  struct stat file {};
  const bool has_identity = ::stat(library_path.c_str(), &file) == 0;
  Registry& all = registry();
  std::lock_guard<std::mutex> lock(all.mutex);
  if (has_identity) {
    for (Entry& entry : all.entries) {
      if (!entry.has_identity || entry.device != file.st_dev || entry.inode != file.st_ino) {
        continue;
      }
      Plugin* plugin = entry.plugin.get();
      record->library_path = plugin->library_path();
      if (!record->manifest_path.empty() && !record->name.empty() &&
          record->name != plugin->name()) {
        skip(record, OAR_STATUS_FAILED_PRECONDITION,
             "the manifest names plugin '" + record->name + "' but the library calls itself '" +
                 plugin->name() + "' (make them agree)");
        return PluginRef();
      }
      if (std::string other = loaded_from(plugin->name()); !other.empty()) {
        skip(record, OAR_STATUS_ALREADY_EXISTS,
             "a plugin named '" + plugin->name() + "' is already loaded from " + other +
                 "; this copy (" + library_path +
                 ") is ignored (remove one of them from the search)");
        return PluginRef();
      }
      if (validate != plugin->validating()) {
        log_line(OAR_LOG_LEVEL_WARNING, plugin->name(),
                 std::string("this runtime asked for validation ") + (validate ? "on" : "off") +
                     " but shares the plugin with a live runtime that loaded it with validation " +
                     (plugin->validating() ? "on" : "off") +
                     "; the first runtime's setting applies (docs/abi.md, two runtimes in one "
                     "process)");
      }
      const std::string manifest_path = record->manifest_path;
      *record = entry.record;
      record->manifest_path = manifest_path;
      ++entry.users;
      return PluginRef(plugin);
    }
  }
  std::unique_ptr<Plugin> plugin = Plugin::load(library_path, record, loaded_from, validate);
  if (plugin == nullptr) return PluginRef();
  Entry entry;
  entry.has_identity = has_identity;
  entry.device = file.st_dev;
  entry.inode = file.st_ino;
  entry.record = *record;
  entry.users = 1;
  entry.plugin = std::move(plugin);
  all.entries.push_back(std::move(entry));
  return PluginRef(all.entries.back().plugin.get());
}

void release_plugin(Plugin* plugin) noexcept {
  if (plugin == nullptr) return;
  Registry& all = registry();
  std::lock_guard<std::mutex> lock(all.mutex);
  for (auto it = all.entries.begin(); it != all.entries.end(); ++it) {
    if (it->plugin.get() != plugin) continue;
    if (--it->users > 0) return;
    std::unique_ptr<Plugin> last = std::move(it->plugin);
    all.entries.erase(it);
    last.reset();  // finalize and unload, still under the lock
    return;
  }
}

}  // namespace oar::detail
