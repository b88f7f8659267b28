// The allocations a plugin handed out, keyed by their oar_memory_t value: what
// copies, fills and kernels check their ranges against, and what closing a
// device frees when the caller leaked it.
//
// Threading: every member is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

struct oar_device_s;  // each plugin defines its own

namespace oar::plugin {

class AllocationTable {
 public:
  struct Allocation {
    uint64_t size = 0;
    uint32_t kind = 0;  // oar_memory_kind_e
    oar_device_s* device = nullptr;
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
  Allocation erase(void* memory, oar_device_s* device);
  // The allocation |memory| names, if the plugin made it.
  bool find(const void* memory, Allocation* out) const;
  // Removes and returns every allocation of |device| (leaked by the caller).
  std::unordered_map<void*, Allocation> take_all(oar_device_s* device);
  // Throws OUT_OF_RANGE if [offset, offset + size) leaves the allocation;
  // |what| names the operand in the message ("copy destination").
  void check_range(const void* memory, uint64_t offset, uint64_t size, const char* what) const;
  // Bytes allocated on the devices |counts| accepts.
  uint64_t allocated_bytes(const std::function<bool(const oar_device_s*)>& counts) const;

 private:
  const std::string plugin_;
  const Unknown unknown_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Allocation> allocations_;
};

}  // namespace oar::plugin
