// OpenCL programs, built once per device and kept on disk: a program is one
// kernels/*.cl source (after kernels/common.cl) compiled with the options of
// one dtype. The first use on a device loads the binary from the disk cache
// (plugins/common/disk_cache.h) keyed by platform, device, driver version and
// a digest of source + options, or compiles and stores it; cl_kernel objects
// are kept per program and used under a lock (clSetKernelArg is not
// thread-safe per kernel object).
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "oar/sdk/disk_cache.hpp"

namespace oar::opencl {

struct PhysicalDevice;

// A kernel object and the lock its users hold between setting arguments and
// enqueueing it.
struct KernelSlot {
  cl_kernel kernel = nullptr;
  std::mutex mutex;
  ~KernelSlot();
};

class ProgramCache {
 public:
  explicit ProgramCache(PhysicalDevice* device);
  ~ProgramCache();

  // The kernel |name| of |source| built for the dtype |tag| ("f32": the
  // options -DX=f32 -DX_F32, plus the device's own). |slot| (< kSlots) names
  // the (source, dtype) pair, so that a kernel already built is found without
  // building strings: this runs on every operator call. Throws with the build
  // log on failure.
  static constexpr size_t kSlots = 144;  // 9 sources x 16 dtype bits
  KernelSlot& kernel(size_t slot, const char* source_name, const char* source, const char* tag,
                     const char* name);
  // The same for a name with a fixed |id| (< kRefs, see kernels/kernel.h's
  // KernelRef): after the first call for (slot, id) the kernel is found
  // without a lock, a string or a map lookup.
  static constexpr size_t kRefs = 128;
  KernelSlot& kernel(size_t slot, size_t id, const char* source_name, const char* source,
                     const char* tag, const char* name) {
    if (KernelSlot* found = resolved(slot, id)) return *found;
    KernelSlot& created = kernel(slot, source_name, source, tag, name);
    if (slot < kSlots && id < kRefs) resolved_[slot][id].store(&created, std::memory_order_release);
    return created;
  }

  // The kernel of (slot, id) once kernel() resolved it, else null; no lock.
  KernelSlot* resolved(size_t slot, size_t id) const {
    if (slot >= kSlots || id >= kRefs) return nullptr;
    return resolved_[slot][id].load(std::memory_order_acquire);
  }

  // How programs were obtained since start: for the log and the tests.
  int compiled() const { return compiled_; }
  int loaded_from_disk() const { return loaded_; }

 private:
  struct Program {
    cl_program program = nullptr;
    // std::less<> finds a const char* name without making a string.
    std::map<std::string, std::unique_ptr<KernelSlot>, std::less<>> kernels;
  };
  Program& program(const char* source_name, const char* source, const std::string& options);
  cl_program build(const char* source_name, const std::string& text, const std::string& options);

  PhysicalDevice* device_;
  oar::sdk::DiskCache disk_;
  std::mutex mutex_;
  std::map<std::string, std::unique_ptr<Program>> programs_;
  Program* slots_[kSlots] = {};
  // Kernel slots by (slot, KernelRef id); a KernelSlot lives as long as this.
  std::atomic<KernelSlot*> resolved_[kSlots][kRefs] = {};
  std::atomic<int> compiled_{0};
  std::atomic<int> loaded_{0};
};

}  // namespace oar::opencl
