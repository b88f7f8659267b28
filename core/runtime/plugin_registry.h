// The plugins loaded by the live runtimes of this process. A plugin library
// has one static state per process (dlopen returns the same copy to every
// caller), so it is initialized once: a second Runtime that finds a library
// another live Runtime loaded shares that instance, and the last Runtime to
// release it finalizes and unloads it. docs/abi.md, "Two runtimes in one
// process", states the rule.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>

#include "oar/runtime.hpp"

namespace oar::detail {

class Plugin;

// Ends one use of |plugin|; the last use finalizes and unloads it. Every
// device the caller opened on it must be closed first.
void release_plugin(Plugin* plugin) noexcept;

// One runtime's use of a plugin, released when it dies.
class PluginRef {
 public:
  PluginRef() = default;
  explicit PluginRef(Plugin* plugin) : plugin_(plugin) {}
  ~PluginRef() { release_plugin(plugin_); }
  PluginRef(PluginRef&& other) noexcept : plugin_(std::exchange(other.plugin_, nullptr)) {}
  PluginRef& operator=(PluginRef&& other) noexcept {
    if (this != &other) {
      release_plugin(plugin_);
      plugin_ = std::exchange(other.plugin_, nullptr);
    }
    return *this;
  }
  PluginRef(const PluginRef&) = delete;
  PluginRef& operator=(const PluginRef&) = delete;

  Plugin* get() const { return plugin_; }
  Plugin* operator->() const { return plugin_; }
  Plugin& operator*() const { return *plugin_; }
  friend bool operator==(const PluginRef& ref, std::nullptr_t) { return ref.plugin_ == nullptr; }
  friend bool operator!=(const PluginRef& ref, std::nullptr_t) { return ref.plugin_ != nullptr; }

 private:
  Plugin* plugin_ = nullptr;
};

// The plugin in |library_path|: the instance a live runtime already loaded
// from the same file (same device and inode), else Plugin::load's. Fills
// |record| like Plugin::load; empty when skipped.
// Threading: thread-safe; loads are serialized.
PluginRef acquire_plugin(const std::string& library_path, PluginRecord* record,
                         const std::function<std::string(const std::string&)>& loaded_from,
                         bool validate);

}  // namespace oar::detail
