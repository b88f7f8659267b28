// The cpu plugin: the host as an OAR device. Memory handles are real host
// pointers (so DLPack consumers of cpu tensors see a usable address), streams
// and events are the SDK's QueueStreams (one worker thread per stream). Kernels
// run on a stream's worker, or on the calling thread when the stream is idle
// and the work small (README.md, OAR_CPU_INLINE_BYTES).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/plugin.hpp"
#include "oar/sdk/queue_streams.hpp"

// The device handle is defined at global scope because oar/handles.h declares
// it there; the core never looks inside. Streams and events are the SDK's
// (oar/sdk/queue_streams.hpp).
struct oar_device_s {
  int32_t index = 0;
};

namespace oar::cpu {

// The plugin's own allocations. A pointer it does not know (memory imported
// through DLPack from another library) is trusted without a check: the cpu
// plugin cannot know its size.
using AllocationTable = oar::sdk::AllocationTable;

// The byte address (memory, offset) names; memory is a host pointer on cpu.
inline char* address(oar_memory_t memory, uint64_t offset) {
  return reinterpret_cast<char*>(memory) + offset;
}

// Adds the cpu kernels to |registrar|; kernels check ranges against |table|.

// The cpu device, also the base of plugins that emulate a device on the host
// (sim): they derive from it and override the protected hooks below, or hide a
// slot member with their own (the SDK finds members with &Impl::slot).
class CpuPlugin : public oar::sdk::QueueStreams {
 public:
  // |thread_prefix| names the streams' worker threads.
  explicit CpuPlugin(const char* thread_prefix = "oar-cpu-s");
  ~CpuPlugin() override;

  // plugin.cc: device (device_synchronize, the stream and event slots come
  // from QueueStreams)
  void device_count(int32_t* out_count);
  void device_properties(int32_t index, oar_device_properties_t* out_properties);
  void device_open(int32_t index, oar_device_t* out_device);
  void device_close(oar_device_t device);
  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total);

  // kernels/registry.cc
  void register_kernels(const oar_kernel_registrar_t* registrar);

  // memory.cc
  void memory_allocate(oar_device_t device, uint64_t size, uint32_t kind, oar_memory_t* out_memory);
  void memory_free(oar_device_t device, oar_memory_t memory);
  void memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address);
  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size);
  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size);
  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size);
  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size);

 protected:
  // Every device's properties (all devices of a plugin are alike).
  oar_device_properties_t properties_{};
  int32_t device_count_ = 1;
  AllocationTable allocations_{"cpu", AllocationTable::Unknown::kTrust};

  // Device memory: |size| bytes (0 still gets a unique block) aligned to
  // properties_.min_alignment, or nullptr when there is none left; may throw.
  virtual void* allocate_bytes(oar_device_s* device, uint64_t size);
  virtual void free_bytes(oar_device_s* device, void* pointer, uint64_t size);
  // Throws OUT_OF_RANGE unless |index| names a device.
  void require_index(int32_t index) const;
  // Closes every device the host left open; a derived class calls it from its
  // destructor, while its overrides still work.
  void release_all_devices();

 private:
  // Open devices, so that finalize can close what the caller leaked.
  std::mutex devices_mutex_;
  std::unordered_set<oar_device_s*> devices_;

  void release_device(oar_device_s* device);
};

using oar::sdk::require_not_null;

}  // namespace oar::cpu
