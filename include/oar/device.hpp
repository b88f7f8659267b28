// oar::Device: one device of one plugin. It is opened on first use, owns a
// default stream and a caching allocator, and releases every stream, event and
// buffer still alive when the runtime closes it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "dlpack/dlpack.h"
#include "oar/buffer.hpp"
#include "oar/device.h"
#include "oar/event.hpp"
#include "oar/memory_stats.hpp"
#include "oar/plugin.h"
#include "oar/stream.hpp"

namespace oar {

namespace detail {
class Plugin;
struct DeviceMemory;
}  // namespace detail

struct MemoryInfo {
  uint64_t free = 0;
  uint64_t total = 0;
};

class Device {
 public:
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // "cpu:0": the plugin's name and its own device index.
  const std::string& name() const { return name_; }
  const std::string& plugin_name() const;
  int32_t index() const { return index_; }
  const oar_device_properties_t& properties() const { return properties_; }
  bool has_feature(uint32_t feature) const { return (properties_.features & feature) != 0; }
  bool has_memory_kind(uint32_t kind) const { return (properties_.memory_kinds & kind) != 0; }
  DLDevice dlpack_device() const {
    return DLDevice{DLDeviceType(properties_.dlpack_device_type), index_};
  }

  // The plugin's handle; opens the device on first use.
  oar_device_t handle() {
    oar_device_t handle = handle_.load(std::memory_order_acquire);
    return handle != nullptr ? handle : open();
  }

  // Whether the plugin registered a kernel for |op| with exactly these dtypes
  // (inputs, then outputs); tries no dispatch and opens nothing. The claim
  // bits in properties().dtypes say which dtypes the device is certified for;
  // this says which kernels exist.
  bool has_kernel(std::string_view op, const std::vector<DLDataType>& inputs,
                  const std::vector<DLDataType>& outputs) const;
  // Every signature the plugin registered a kernel for |op| with: the dtypes
  // of its inputs, then of its outputs (in no particular order; empty for an
  // operator without kernels or outside the set). Opens nothing.
  struct KernelSignature {
    std::vector<DLDataType> inputs;
    std::vector<DLDataType> outputs;
  };
  std::vector<KernelSignature> kernel_signatures(std::string_view op) const;

  Stream& default_stream();
  Stream create_stream(int32_t priority = OAR_STREAM_PRIORITY_NORMAL);
  // |flags|: oar_event_flag_e bits (OAR_EVENT_FLAG_TIMING).
  Event create_event(uint32_t flags = 0);

  // Device memory from the caching allocator, ordered on |stream| (the default
  // stream when null): reusable by that stream as soon as it is destroyed.
  Buffer allocate(uint64_t size, Stream* stream = nullptr);
  // Memory of |kind| straight from the plugin, freed when the buffer dies.
  Buffer allocate_uncached(uint64_t size, uint32_t kind = OAR_MEMORY_KIND_DEVICE);
  MemoryStats memory_stats() const;
  void reset_peak_memory_stats();
  // Returns the allocator's unused cached memory to the plugin.
  void empty_cache();

  MemoryInfo memory_info();
  // Blocks until all work on all streams of the device is done.
  void synchronize();

  // Synchronous copies on the default stream.
  void upload(const Buffer& dst, uint64_t dst_offset, const void* src, uint64_t size);
  void download(void* dst, const Buffer& src, uint64_t src_offset, uint64_t size);

  // For the runtime and the C++ API's own classes.
  detail::Plugin& plugin() const { return *plugin_; }
  const oar_plugin_api_t& api() const { return *api_; }
  Device(detail::Plugin* plugin, int32_t index, const oar_device_properties_t& properties);
  // Releases every tracked object, the allocator and the default stream, then
  // closes the plugin device. Called by the runtime before finalize.
  void close() noexcept;
  void track(detail::Tracked* object);
  void untrack(detail::Tracked* object);
  void retrack(detail::Tracked* object, detail::Tracked* previous);
  void free_block(void* block) noexcept;
  void record_block_stream(void* block, Stream& stream);
  // Called as a stream dies, after its work is done and before its handle is.
  void forget_stream(oar_stream_t stream) noexcept;

 private:
  oar_device_t open();

  detail::Plugin* plugin_;
  const oar_plugin_api_t* api_;
  int32_t index_;
  oar_device_properties_t properties_;
  std::string name_;

  // The caching allocator, made on first use (under mutex_); nullptr before.
  detail::DeviceMemory* memory() const { return memory_.load(std::memory_order_acquire); }
  detail::DeviceMemory& memory_or_create();

  // Throws FAILED_PRECONDITION naming |operation| once the device is closed.
  void check_open(const char* operation) const;

  std::mutex mutex_;  // guards opening, closing and the tracked list
  // Guards creating the default stream and the allocator. Both are published
  // through atomics, so the paths that only read them (memory_stats,
  // free_block, ...) take no lock and still see a fully built object.
  std::mutex create_mutex_;
  std::atomic<oar_device_t> handle_{nullptr};
  std::atomic<bool> closed_{false};
  std::unique_ptr<Stream> default_stream_owner_;
  std::atomic<Stream*> default_stream_{nullptr};
  std::unique_ptr<detail::DeviceMemory> memory_owner_;
  std::atomic<detail::DeviceMemory*> memory_{nullptr};
  detail::Tracked* tracked_ = nullptr;  // head of the intrusive list
};

}  // namespace oar
