// The sim plugin's entry point, its memory and its engine hooks.
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>
#include <thread>

#include "collective.h"
#include "settings.h"
#include "sim.h"

namespace oar::sim {
namespace {

uint64_t page_size() {
  static const uint64_t size = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  return size;
}

uint64_t mapped_length(uint64_t size) {
  uint64_t page = page_size();
  return size == 0 ? page : (size + page - 1) / page * page;
}

// Runs an engine task with device memory accessible.
class Accessible {
 public:
  explicit Accessible(Protector& protector) : protector_(protector) { protector_.enter(); }
  ~Accessible() { protector_.leave(); }

 private:
  Protector& protector_;
};

}  // namespace

Protector::~Protector() {
  for (auto& [start, length] : regions_) munmap(start, length);
}

void* Protector::map(uint64_t size) {
  uint64_t length = mapped_length(size);
  std::lock_guard<std::mutex> lock(mutex_);
  int protection = active_ > 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
  void* start =
      mmap(nullptr, length, protection, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (start == MAP_FAILED) return nullptr;
  regions_.emplace(static_cast<char*>(start), length);
  return start;
}

void Protector::unmap(void* pointer) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = regions_.find(static_cast<char*>(pointer));
  if (it == regions_.end()) return;
  munmap(it->first, it->second);
  regions_.erase(it);
}

bool Protector::contains(const void* pointer) const {
  const char* p = static_cast<const char*>(pointer);
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = regions_.upper_bound(const_cast<char*>(p));
  if (it == regions_.begin()) return false;
  --it;
  return p >= it->first && p < it->first + it->second;
}

void Protector::protect_all(int protection) {
  for (auto& [start, length] : regions_) mprotect(start, length, protection);
}

void Protector::enter() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (active_++ == 0) protect_all(PROT_READ | PROT_WRITE);
}

void Protector::leave() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (--active_ == 0) protect_all(PROT_NONE);
}

SimPlugin::SimPlugin()
    : CpuPlugin("oar-sim-s"),
      profile_(make_profile(environment("OAR_SIM_PROFILE"))),
      timing_(parse_timing(environment("OAR_SIM_COPY_GBPS"), environment("OAR_SIM_LAUNCH_US"))) {
  FaultConfig faults = parse_faults(environment("OAR_SIM_FAULTS"));
  properties_ = profile_.properties;
  device_count_ = profile_.devices;
  for (int32_t i = 0; i < device_count_; ++i) {
    states_.push_back(std::make_unique<DeviceState>(faults, i));
  }
  if (faults.any()) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "sim: fault injection is on (OAR_SIM_FAULTS=" +
                                             environment("OAR_SIM_FAULTS") + ")");
  }
}

SimPlugin::~SimPlugin() {
  // Close leaked devices while free_bytes and the engine hooks still work.
  release_all_devices();
}

void* SimPlugin::allocate_bytes(oar_device_s* device, uint64_t size) {
  DeviceState& state = *states_.at(device->index);
  state.faults.on_allocate();
  uint64_t length = mapped_length(size);
  uint64_t total = properties_.total_memory;
  uint64_t used = state.allocated.load();
  do {
    if (length > total - used) {
      throw oar::sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                            "memory_allocate: sim device " + std::to_string(device->index) +
                                " is out of memory: " + std::to_string(size) +
                                " bytes requested, " + std::to_string(total - used) + " of " +
                                std::to_string(total) + " free");
    }
  } while (!state.allocated.compare_exchange_weak(used, used + length));
  void* pointer = protector_.map(size);
  if (pointer == nullptr) {
    state.allocated -= length;
    throw oar::sdk::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                          "memory_allocate: mmap of " + std::to_string(length) +
                              " bytes failed: " + std::strerror(errno));
  }
  return pointer;
}

void SimPlugin::free_bytes(oar_device_s* device, void* pointer, uint64_t size) {
  protector_.unmap(pointer);
  states_.at(device->index)->allocated -= mapped_length(size);
}

oar::sdk::TaskWrapper SimPlugin::task_wrapper(oar_device_t device) {
  DeviceState* state = states_.at(device->index).get();
  return [this, state](const oar::sdk::TaskInfo& info, const std::function<void()>& work) {
    using Kind = oar::sdk::TaskInfo::Kind;
    if (info.kind == Kind::kOther) {  // waits on events: no device work
      work();
      return;
    }
    state->faults.on_operation(info.kind == Kind::kKernel, info.kind == Kind::kCopy);
    uint64_t modelled_ns = 0;
    if (info.kind == Kind::kKernel) modelled_ns = timing_.launch_ns;
    if (info.kind == Kind::kCopy) modelled_ns = timing_.copy_ns(info.bytes);
    auto start = std::chrono::steady_clock::now();
    {
      Accessible accessible(protector_);
      work();
    }
    if (modelled_ns > 0)
      std::this_thread::sleep_until(start + std::chrono::nanoseconds(modelled_ns));
  };
}

void SimPlugin::stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                              oar_stream_t* out_stream) {
  oar::cpu::require_not_null(device, "device");
  states_.at(device->index)->faults.check_not_lost();
  QueueStreams::stream_create(device, desc, out_stream);
}

void SimPlugin::event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
  oar::cpu::require_not_null(device, "device");
  states_.at(device->index)->faults.check_not_lost();
  QueueStreams::event_create(device, flags, out_event);
}

void SimPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  oar::cpu::require_not_null(registrar, "registrar");
  // The cpu kernels register through this registrar, which puts the check of
  // every tensor's memory in front of each of them.
  oar_kernel_registrar_t checking = *registrar;
  checking.context = this;
  checking.register_kernel = &SimPlugin::register_checked;
  outer_registrar_ = registrar;
  CpuPlugin::register_kernels(&checking);
  outer_registrar_ = nullptr;
}

oar_status_t SimPlugin::register_checked(void* context, const oar_kernel_def_t* def) {
  return oar::sdk::guard([&] {
    auto* self = static_cast<SimPlugin*>(context);
    self->checked_kernels_.push_back(CheckedKernel{self, def->fn, def->user_data, def->op_name});
    oar_kernel_def_t checked = *def;
    checked.fn = &SimPlugin::run_checked_kernel;
    checked.user_data = &self->checked_kernels_.back();
    const oar_kernel_registrar_t* outer = self->outer_registrar_;
    return outer->register_kernel(outer->context, &checked);
  });
}

oar_status_t SimPlugin::run_checked_kernel(const oar_kernel_call_t* call) {
  const auto* kernel = static_cast<const CheckedKernel*>(call->user_data);
  oar_status_t checked = oar::sdk::guard([&] {
    auto check = [&](const DLTensor& tensor, const char* what, size_t index) {
      for (int32_t d = 0; d < tensor.ndim; ++d) {
        if (tensor.shape != nullptr && tensor.shape[d] == 0) return;  // nothing is touched
      }
      oar::cpu::AllocationTable::Allocation allocation{};
      bool known = kernel->plugin->allocations_.find(tensor.data, &allocation);
      oar::sdk::require(known, OAR_STATUS_INVALID_ARGUMENT,
                        kernel->op + ": " + what + " " + std::to_string(index) +
                            " is not sim device memory (host memory passed as device memory?)");
      oar::sdk::require(allocation.device == call->device, OAR_STATUS_INVALID_ARGUMENT,
                        kernel->op + ": " + what + " " + std::to_string(index) +
                            " is memory of sim device " + std::to_string(allocation.device->index) +
                            ", not of device " + std::to_string(call->device->index));
    };
    for (size_t i = 0; i < call->num_inputs; ++i) check(call->inputs[i], "input", i);
    for (size_t i = 0; i < call->num_outputs; ++i) check(call->outputs[i], "output", i);
  });
  if (checked != OAR_STATUS_OK) return checked;
  oar_kernel_call_t original = *call;
  original.user_data = kernel->user_data;
  return kernel->fn(&original);
}

void SimPlugin::require_device_memory(const void* memory, int32_t index, const char* what) const {
  oar::sdk::require(memory != nullptr, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + ": memory handle is NULL");
  oar::cpu::AllocationTable::Allocation allocation{};
  oar::sdk::require(allocations_.find(memory, &allocation), OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " is not sim device memory (wrong copy direction?)");
  oar::sdk::require(allocation.device->index == index, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " is memory of sim device " +
                        std::to_string(allocation.device->index) + ", not of device " +
                        std::to_string(index) + " (use memory_copy_peer)");
}

void SimPlugin::require_host_memory(const void* pointer, const char* what) const {
  oar::sdk::require(!protector_.contains(pointer), OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) +
                        " is sim device memory, not host memory (wrong copy "
                        "direction?)");
}

void SimPlugin::device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total) {
  oar::cpu::require_not_null(device, "device");
  oar::cpu::require_not_null(out_free, "out_free");
  oar::cpu::require_not_null(out_total, "out_total");
  uint64_t total = properties_.total_memory;
  uint64_t used = states_.at(device->index)->allocated.load();
  *out_free = used < total ? total - used : 0;
  *out_total = total;
}

void SimPlugin::memory_host_address(oar_device_t device, oar_memory_t memory, void** out_address) {
  (void)device;
  (void)memory;
  (void)out_address;
  throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                        "memory_host_address: sim device memory is not host-visible");
}

void SimPlugin::memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                const void* src, uint64_t size) {
  oar::cpu::require_not_null(stream, "stream");
  require_device_memory(dst, stream->device->index, "memory_copy_h2d (host to device) destination");
  require_host_memory(src, "memory_copy_h2d (host to device) source");
  CpuPlugin::memory_copy_h2d(stream, dst, dst_offset, src, size);
}

void SimPlugin::memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src,
                                uint64_t src_offset, uint64_t size) {
  oar::cpu::require_not_null(stream, "stream");
  require_device_memory(src, stream->device->index, "memory_copy_d2h (device to host) source");
  require_host_memory(dst, "memory_copy_d2h (device to host) destination");
  CpuPlugin::memory_copy_d2h(stream, dst, src, src_offset, size);
}

void SimPlugin::memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                oar_memory_t src, uint64_t src_offset, uint64_t size) {
  oar::cpu::require_not_null(stream, "stream");
  require_device_memory(dst, stream->device->index,
                        "memory_copy_d2d (device to device) destination");
  require_device_memory(src, stream->device->index, "memory_copy_d2d (device to device) source");
  CpuPlugin::memory_copy_d2d(stream, dst, dst_offset, src, src_offset, size);
}

void SimPlugin::memory_copy_peer(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                 oar_device_t src_device, oar_memory_t src, uint64_t src_offset,
                                 uint64_t size) {
  oar::cpu::require_not_null(stream, "stream");
  oar::cpu::require_not_null(src_device, "src_device");
  oar::sdk::require(
      (properties_.features & OAR_DEVICE_FEATURE_PEER_ACCESS) != 0, OAR_STATUS_UNIMPLEMENTED,
      "memory_copy_peer: the sim profile \"" + profile_.name + "\" has no peer access");
  require_device_memory(dst, stream->device->index, "memory_copy_peer destination");
  require_device_memory(src, src_device->index, "memory_copy_peer source");
  allocations_.check_range(dst, dst_offset, size, "memory_copy_peer destination");
  allocations_.check_range(src, src_offset, size, "memory_copy_peer source");
  if (size == 0) return;
  char* to = oar::cpu::address(dst, dst_offset);
  const char* from = oar::cpu::address(src, src_offset);
  if (to == from) return;
  oar::sdk::require(to + size <= from || from + size <= to, OAR_STATUS_INVALID_ARGUMENT,
                    "memory_copy_peer: source and destination ranges partly overlap");
  stream->queue->submit([to, from, size] { std::memcpy(to, from, size); },
                        {oar::sdk::TaskInfo::kCopy, size});
}

void SimPlugin::memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                            uint8_t value, uint64_t size) {
  oar::cpu::require_not_null(stream, "stream");
  require_device_memory(dst, stream->device->index, "memory_fill destination");
  CpuPlugin::memory_fill(stream, dst, dst_offset, value, size);
}

}  // namespace oar::sim

// The table: SimPlugin plus the collective slots (collective.cc).
OAR_PLUGIN_DEFINE(oar::sim::SimCollectivePlugin, "sim", "0.1.0", "OAR project")
