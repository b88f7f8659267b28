// The sim plugin: an emulated discrete accelerator built on the cpu device
// (plugins/cpu, linked as oar_cpu_device), whose memory the host cannot touch.
//
//  - Device memory is reserved with mmap and kept PROT_NONE; only while an
//    engine (a stream's worker) runs a copy or a kernel is it readable and
//    writable, so a host dereference of a device address faults.
//  - Copies check their declared direction against the addresses.
//  - Profiles (OAR_SIM_PROFILE) set the devices' capabilities; faults
//    (OAR_SIM_FAULTS) are injected deterministically; copy bandwidth
//    (OAR_SIM_COPY_GBPS) and launch latency (OAR_SIM_LAUNCH_US) are modelled.
#pragma once

#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "cpu.h"
#include "faults.h"
#include "profile.h"
#include "settings.h"

namespace oar::sim {

// Every live region of the plugin's devices, and whether any engine is
// running: regions are RW while one is, PROT_NONE otherwise. Plugin-wide, so
// that a peer copy may touch two devices' memory. Thread-safe.
class Protector {
 public:
  ~Protector();
  // Maps |size| bytes (page-rounded, not 0), protected as the engines require.
  void* map(uint64_t size);
  void unmap(void* pointer);
  // Whether |pointer| lies inside a live region.
  bool contains(const void* pointer) const;
  void enter();  // an engine task starts
  void leave();  // an engine task ends

 private:
  void protect_all(int protection);  // with mutex_ held

  mutable std::mutex mutex_;
  std::map<char*, uint64_t> regions_;  // start -> mapped length
  int active_ = 0;
};

// The state of one device index: its memory accounting and its faults.
struct DeviceState {
  DeviceState(const FaultConfig& faults, int32_t index) : faults(faults, index) {}
  FaultInjector faults;
  std::atomic<uint64_t> allocated{0};  // bytes mapped, page-rounded
};

class SimPlugin : public oar::cpu::CpuPlugin {
 public:
  SimPlugin();
  ~SimPlugin() override;

  // Members that hide the cpu device's: the SDK fills the slots with these.
  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total);
  void memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address);
  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size);
  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size);
  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size);
  void memory_copy_peer(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                        oar_device_t src_device, oar_memory_t src, uint64_t src_offset,
                        uint64_t size);
  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size);
  // Refused with UNAVAILABLE once the device is lost (OAR_SIM_FAULTS lost_after).
  void stream_create(oar_device_t device, const oar_stream_desc_t* desc, oar_stream_t* out_stream);
  void event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event);
  // The cpu kernels, each behind a check that every tensor it is given is
  // memory of the call's sim device: a cpu kernel would read and write a host
  // pointer passed as device memory as if it were.
  void register_kernels(const oar_kernel_registrar_t* registrar);

 protected:
  void* allocate_bytes(oar_device_s* device, uint64_t size) override;
  void free_bytes(oar_device_s* device, void* pointer, uint64_t size) override;
  oar::sdk::TaskWrapper task_wrapper(oar_device_t device) override;

 private:
  // Throws INVALID_ARGUMENT unless |memory| is an allocation of device
  // |index|; |what| names the operand ("memory_copy_h2d destination").
  void require_device_memory(const void* memory, int32_t index, const char* what) const;
  // Throws INVALID_ARGUMENT if host |pointer| lies in device memory.
  void require_host_memory(const void* pointer, const char* what) const;

  // A cpu kernel registered behind the memory check.
  struct CheckedKernel {
    SimPlugin* plugin;
    oar_kernel_fn fn;
    void* user_data;
    std::string op;
  };
  static oar_status_t register_checked(void* context, const oar_kernel_def_t* def);
  static oar_status_t run_checked_kernel(const oar_kernel_call_t* call);

  Profile profile_;
  Timing timing_;
  std::deque<CheckedKernel> checked_kernels_;                // stable addresses: they are user_data
  const oar_kernel_registrar_t* outer_registrar_ = nullptr;  // during register_kernels
  Protector protector_;
  std::vector<std::unique_ptr<DeviceState>> states_;  // by device index
};

}  // namespace oar::sim
