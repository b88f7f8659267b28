// The sample plugin: what a vendor writes for a new chip, built out of OAR's
// tree on the installed SDK. The "chip" here is emulated on the host so that
// the sample runs anywhere: its memory is host memory the plugin hands out as
// opaque handles (the framework only copies to and from it), and its engine
// is one worker thread per stream. A real plugin replaces the four marked
// places with its runtime's calls (docs/porting/ maps them per runtime):
//
//   (1) device discovery and properties   (3) copies and fills
//   (2) memory allocation                 (4) kernels (kernels.cc)
//
// Streams, events, host callbacks, device_synchronize and their error rules
// come from oar::sdk::QueueStreams; range checks from oar::sdk::AllocationTable.
#include "oar/sdk/plugin.hpp"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>

#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"
#include "oar/sdk/queue_streams.hpp"
#include "sample.h"

// The dtypes beyond f32, the ints and bool that the device claims
// (samples/primitives_plugin builds this runtime claiming f16 and bf16).
#ifndef SAMPLE_DTYPES
#define SAMPLE_DTYPES 0
#endif

// The device handle; oar/handles.h declares it, the core never looks inside.
// Streams and events are the SDK's (oar/sdk/queue_streams.hpp).
struct oar_device_s {
  int32_t index = 0;
};

namespace sample {
namespace sdk = oar::sdk;

constexpr int32_t kDevices = 1;
constexpr uint64_t kAlignment = 256;
constexpr uint64_t kTotalMemory = uint64_t(2) << 30;  // what the device offers
constexpr uint64_t kMaxAllocation = uint64_t(1) << 30;

char* address(oar_memory_t memory, uint64_t offset) {
  return reinterpret_cast<char*>(memory) + offset;
}

class SamplePlugin : public sdk::QueueStreams {
 public:
  // initialize: a real plugin opens its runtime here (and reports zero
  // devices, not an error, when the runtime or the chip is absent).
  SamplePlugin() : QueueStreams("sample-s") {}
  // finalize: the core closed every device; close what a careless host left.
  ~SamplePlugin() override {
    std::unordered_set<oar_device_s*> open;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      open.swap(open_);
    }
    for (oar_device_s* device : open) release(device);
  }

  // (1) Devices.
  void device_count(int32_t* out_count) {
    sdk::require_not_null(out_count, "out_count");
    *out_count = kDevices;
  }

  void device_properties(int32_t index, oar_device_properties_t* out_properties) {
    require_index(index);
    oar_device_properties_t p{};
    p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    sdk::copy_text(p.name, "OAR sample accelerator (emulated on the host)");
    sdk::copy_text(p.vendor, "Example Chips Inc.");
    sdk::copy_text(p.driver_version, "0.1.0");
    p.kind = OAR_DEVICE_KIND_ACCELERATOR;
    // No DLPack consumer can read this chip's handles: kDLExtDev
    // (docs/abi.md, section 5).
    p.dlpack_device_type = kDLExtDev;
    p.total_memory = kTotalMemory;
    p.max_allocation_size = kMaxAllocation;
    p.min_alignment = kAlignment;
    p.memory_kinds = OAR_MEMORY_KIND_DEVICE;
    p.dtypes = SAMPLE_DTYPES;  // beyond f32, the ints and bool (none unless a build says)
    p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
                 OAR_DEVICE_FEATURE_HOST_CALLBACKS;
    p.compute_units = 1;
    sdk::copy_properties(p, out_properties);
  }

  void device_open(int32_t index, oar_device_t* out_device) {
    require_index(index);
    sdk::require_not_null(out_device, "out_device");
    auto device = std::make_unique<oar_device_s>();
    device->index = index;
    std::lock_guard<std::mutex> lock(mutex_);
    open_.insert(device.get());
    *out_device = device.release();
  }

  void device_close(oar_device_t device) {
    if (device == nullptr) return;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sdk::require(open_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                   "device_close: not an open sample device");
    }
    release(device);
  }

  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_free, "out_free");
    sdk::require_not_null(out_total, "out_total");
    std::lock_guard<std::mutex> lock(mutex_);
    *out_free = kTotalMemory - used_;
    *out_total = kTotalMemory;
  }

  // (2) Memory: one allocation per handle, aligned, within the device's budget.
  void memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                       oar_memory_t* out_memory) {
    sdk::require_not_null(device, "device");
    sdk::require_not_null(out_memory, "out_memory");
    sdk::require(kind == OAR_MEMORY_KIND_DEVICE, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_allocate: kind " + std::to_string(kind) +
                     " is not OAR_MEMORY_KIND_DEVICE, the only kind the device lists");
    sdk::require(size <= kMaxAllocation, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_allocate: " + std::to_string(size) + " bytes exceed max_allocation_size " +
                     std::to_string(kMaxAllocation));
    const uint64_t rounded =
        size == 0 ? kAlignment : (size + kAlignment - 1) / kAlignment * kAlignment;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      sdk::require(rounded <= kTotalMemory - used_, OAR_STATUS_RESOURCE_EXHAUSTED,
                   "memory_allocate: " + std::to_string(size) + " bytes do not fit in the " +
                       std::to_string(kTotalMemory - used_) + " bytes left");
      used_ += rounded;
    }
    void* pointer = std::aligned_alloc(kAlignment, rounded);
    if (pointer == nullptr) {
      unaccount(rounded);
      throw sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED, "memory_allocate: the host has no memory");
    }
    allocations_.insert(pointer, {size, kind, device});
    *out_memory = static_cast<oar_memory_t>(pointer);
  }

  void memory_free(oar_device_t device, oar_memory_t memory) {
    if (memory == nullptr) return;
    sdk::AllocationTable::Allocation allocation = allocations_.erase(memory, device);
    std::free(memory);
    unaccount(allocation.size);
  }

  // (3) Copies and fills: checked now, run in stream order by the worker.
  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size) {
    allocations_.check_range(dst, dst_offset, size, "memory_copy_h2d destination");
    if (size != 0) sdk::require_not_null(src, "memory_copy_h2d source");
    copy(stream, address(dst, dst_offset), src, size);
  }

  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size) {
    allocations_.check_range(src, src_offset, size, "memory_copy_d2h source");
    if (size != 0) sdk::require_not_null(dst, "memory_copy_d2h destination");
    copy(stream, dst, address(src, src_offset), size);
  }

  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size) {
    allocations_.check_range(dst, dst_offset, size, "memory_copy_d2d destination");
    allocations_.check_range(src, src_offset, size, "memory_copy_d2d source");
    char* to = address(dst, dst_offset);
    const char* from = address(src, src_offset);
    if (to == from) return;  // identical ranges: nothing to move
    sdk::require(to + size <= from || from + size <= to, OAR_STATUS_INVALID_ARGUMENT,
                 "memory_copy_d2d: source and destination ranges partly overlap");
    copy(stream, to, from, size);
  }

  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size) {
    allocations_.check_range(dst, dst_offset, size, "memory_fill destination");
    sdk::require_not_null(stream, "stream");
    char* to = address(dst, dst_offset);
    if (size != 0)
      submit(stream, [to, value, size] { std::memset(to, value, size); },
             {sdk::TaskInfo::kCopy, size});
  }

  // (4) Kernels: kernels.cc.
  void register_kernels(const oar_kernel_registrar_t* registrar) {
    sample::register_kernels(registrar, kernels_, allocations_);
  }

 private:
  static void require_index(int32_t index) {
    sdk::require(index >= 0 && index < kDevices, OAR_STATUS_OUT_OF_RANGE,
                 "device index " + std::to_string(index) + " is out of range (" +
                     std::to_string(kDevices) + " device(s))");
  }

  // The host side of a copy stays the caller's until the copy is observed
  // complete (docs/abi.md, P13), so the worker reads it in place.
  static void copy(oar_stream_t stream, void* dst, const void* src, uint64_t size) {
    sdk::require_not_null(stream, "stream");
    if (size == 0) return;
    submit(stream, [dst, src, size] { std::memcpy(dst, src, size); }, {sdk::TaskInfo::kCopy, size});
  }

  void unaccount(uint64_t size) {
    const uint64_t rounded =
        size == 0 ? kAlignment : (size + kAlignment - 1) / kAlignment * kAlignment;
    std::lock_guard<std::mutex> lock(mutex_);
    used_ -= rounded;
  }

  // Streams first (their pending work may touch the memory), then memory.
  void release(oar_device_s* device) {
    QueueStreams::release_device(device);
    for (auto& [memory, allocation] : allocations_.take_all(device)) {
      std::free(memory);
      unaccount(allocation.size);
    }
    delete device;
  }

  std::mutex mutex_;
  std::unordered_set<oar_device_s*> open_;
  uint64_t used_ = 0;  // bytes of device memory handed out, rounded
  sdk::AllocationTable allocations_{"sample", sdk::AllocationTable::Unknown::kRefuse};
  sdk::KernelTable kernels_;
};

}  // namespace sample

OAR_PLUGIN_DEFINE(sample::SamplePlugin, OAR_PLUGIN_NAME, "0.1.0", "Example Chips Inc.")
