// The allocations a plugin handed out, keyed by their oar_memory_t value: what
// copies, fills and kernels check their ranges against (the core checks the
// ranges of its own buffers; a plugin checks again because its slots are
// called by any host, and a kernel's tensor may be a DLPack import), and what
// closing a device frees when the caller leaked it.
//
// Threading: every member is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "dlpack/dlpack.h"
#include "oar/handles.h"

namespace oar::sdk {

class AllocationTable {
 public:
  struct Allocation {
    uint64_t size = 0;
    uint32_t kind = 0;  // oar_memory_kind_e
    oar_device_t device = nullptr;
  };

  // What check_range does with a handle the table does not know.
  enum class Unknown {
    kRefuse,  // INVALID_ARGUMENT: every valid handle came from this plugin
    kTrust,   // no check: memory imported through DLPack whose size is unknown
  };

  // |plugin| names the plugin in messages ("opencl").
  AllocationTable(std::string plugin, Unknown unknown)
      : plugin_(std::move(plugin)), unknown_(unknown) {}

  void insert(void* memory, Allocation allocation);
  // Removes |memory| and returns it; throws INVALID_ARGUMENT if it is unknown
  // (never allocated, or freed already) or belongs to another device handle.
  Allocation erase(void* memory, oar_device_t device);
  // The allocation |memory| names, if the plugin made it.
  bool find(const void* memory, Allocation* out) const;
  // Removes and returns every allocation of |device| (leaked by the caller).
  std::unordered_map<void*, Allocation> take_all(oar_device_t device);
  // Throws OUT_OF_RANGE if [offset, offset + size) leaves the allocation;
  // |what| names the operand in the message ("copy destination").
  void check_range(const void* memory, uint64_t offset, uint64_t size, const char* what) const;
  // check_range over the bytes tensor |t| spans (byte_span in oar/sdk/kernel.hpp:
  // byte_offset, shape, strides and dtype).
  void check_tensor(const DLTensor& t, const char* what) const;
  // Bytes allocated on the devices |counts| accepts.
  uint64_t allocated_bytes(const std::function<bool(oar_device_t)>& counts) const;

 private:
  const std::string plugin_;
  const Unknown unknown_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Allocation> allocations_;
};

}  // namespace oar::sdk
