// The cpu plugin's entry point and its one device: the host.
#include <cblas.h>
#include <dlfcn.h>
#include <omp.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cpu.h"
#include "cpuinfo.h"

namespace oar::cpu {
namespace {

// The value of the first "key : value" line of a /proc file whose key is one
// of |keys|, or "".
std::string proc_field(const char* path, std::initializer_list<const char*> keys) {
  std::ifstream file(path);
  std::string line;
  while (std::getline(file, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    key.erase(key.find_last_not_of(" \t") + 1);
    for (const char* wanted : keys) {
      if (key != wanted) continue;
      size_t start = line.find_first_not_of(" \t", colon + 1);
      return start == std::string::npos ? std::string() : line.substr(start);
    }
  }
  return {};
}

uint64_t physical_memory() {
  long pages = sysconf(_SC_PHYS_PAGES);
  long page_size = sysconf(_SC_PAGE_SIZE);
  if (pages > 0 && page_size > 0) return static_cast<uint64_t>(pages) * page_size;
  struct sysinfo info {};
  if (sysinfo(&info) == 0) return static_cast<uint64_t>(info.totalram) * info.mem_unit;
  return 0;
}

// MemAvailable counts reclaimable page cache, which is what an allocation can
// really get; free RAM alone would understate it badly.
uint64_t available_memory() {
  std::string kib = proc_field("/proc/meminfo", {"MemAvailable"});
  if (!kib.empty()) return std::stoull(kib) * 1024;  // "123456 kB"
  struct sysinfo info {};
  oar::sdk::require(sysinfo(&info) == 0, OAR_STATUS_INTERNAL,
                    "neither /proc/meminfo nor sysinfo() tells the free memory");
  return (static_cast<uint64_t>(info.freeram) + info.bufferram) * info.mem_unit;
}

oar_device_properties_t host_properties() {
  oar_device_properties_t p{};
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
#if defined(__aarch64__)
  constexpr bool kAarch64 = true;
#else
  constexpr bool kAarch64 = false;
#endif
  CpuInfo cpu = host_cpuinfo();
  oar::sdk::copy_text(p.name, device_name(cpu, kAarch64));
  oar::sdk::copy_text(p.vendor, cpu.vendor.empty() ? std::string("unknown") : cpu.vendor);
  struct utsname uts {};
  oar::sdk::copy_text(p.driver_version, uname(&uts) == 0 ? uts.release : "unknown");
  p.kind = OAR_DEVICE_KIND_CPU;
  p.dlpack_device_type = kDLCPU;
  p.total_memory = physical_memory();
  p.max_allocation_size = p.total_memory;
  p.min_alignment = 64;  // a cache line and an AVX-512 vector
  p.memory_kinds = OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED | OAR_MEMORY_KIND_UNIFIED;
  // Claims about kernels (docs/abi.md, "Dtype claims and kernels"): f16 and
  // bf16 are computed in f32 and rounded once, so every x86-64 and aarch64
  // processor runs them. What the processor computes itself (fphp + asimdhp,
  // bf16, avx512_fp16, ...) is native_dtypes, from its features.
  p.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64;
  p.native_dtypes = native_dtypes(cpu, kAarch64);
  p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
               OAR_DEVICE_FEATURE_HOST_CALLBACKS;
  unsigned threads = std::thread::hardware_concurrency();
  p.compute_units = threads == 0 ? 1 : threads;
  return p;
}

}  // namespace

void CpuPlugin::require_index(int32_t index) const {
  oar::sdk::require(index >= 0 && index < device_count_, OAR_STATUS_OUT_OF_RANGE,
                    "device index " + std::to_string(index) + " is out of range (" +
                        std::to_string(device_count_) + " device(s))");
}

namespace {

// OpenMP and OpenBLAS keep pools of idle threads inside their own libraries.
// If unloading this plugin unloaded them too, those threads would run unmapped
// code: keep both libraries loaded for the life of the process.
void pin_library_of(const void* symbol) {
  Dl_info info{};
  if (dladdr(symbol, &info) != 0 && info.dli_fname != nullptr) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  }
}

// Small work on an idle stream runs on the calling thread (plugins/cpu/
// README.md, "Small work runs inline"): up to OAR_CPU_INLINE_BYTES bytes of
// tensors or copy (default 64 KiB; 0 turns it off), never under OAR_VALIDATE,
// whose users want the framework's missing synchronizations to show.
oar::sdk::WorkQueueOptions queue_options() {
  constexpr uint64_t kDefaultInlineBytes = 64 << 10;
  oar::sdk::WorkQueueOptions options;
  options.inline_max_bytes = kDefaultInlineBytes;
  if (const char* validate = secure_getenv("OAR_VALIDATE")) {
    std::string value = validate;
    for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (value == "1" || value == "true" || value == "yes" || value == "on") {
      options.inline_max_bytes = 0;
    }
  }
  if (const char* text = secure_getenv("OAR_CPU_INLINE_BYTES")) {
    char* end = nullptr;
    errno = 0;
    unsigned long long bytes = std::strtoull(text, &end, 10);
    if (end != text && *end == '\0' && errno == 0 && text[0] != '-') {
      options.inline_max_bytes = bytes;
    } else {
      oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                    std::string("OAR_CPU_INLINE_BYTES=\"") + std::string(text).substr(0, 64) +
                        "\" is not a byte count; kept " + std::to_string(options.inline_max_bytes));
    }
  }
  return options;
}

}  // namespace

CpuPlugin::CpuPlugin(const char* thread_prefix)
    : QueueStreams(thread_prefix), properties_(host_properties()) {
  pin_library_of(reinterpret_cast<const void*>(&omp_get_max_threads));
  pin_library_of(reinterpret_cast<const void*>(&cblas_sgemm));
  // A plugin deriving from this one with a task wrapper (sim) stays
  // asynchronous: WorkQueue runs nothing inline around a wrapper.
  set_queue_options(queue_options());
}

CpuPlugin::~CpuPlugin() { release_all_devices(); }

void CpuPlugin::release_all_devices() {
  // The core closes devices before finalize; a host that forgot must still not
  // leave worker threads running in a library about to be unloaded.
  std::unordered_set<oar_device_s*> leaked;
  {
    std::lock_guard<std::mutex> lock(devices_mutex_);
    leaked.swap(devices_);
  }
  for (oar_device_s* device : leaked) release_device(device);
}

void CpuPlugin::device_count(int32_t* out_count) {
  require_not_null(out_count, "out_count");
  *out_count = device_count_;
}

void CpuPlugin::device_properties(int32_t index, oar_device_properties_t* out_properties) {
  require_index(index);
  oar::sdk::copy_properties(properties_, out_properties);
}

void CpuPlugin::device_open(int32_t index, oar_device_t* out_device) {
  require_index(index);
  require_not_null(out_device, "out_device");
  auto device = std::make_unique<oar_device_s>();
  device->index = index;
  std::lock_guard<std::mutex> lock(devices_mutex_);
  devices_.insert(device.get());
  *out_device = device.release();
}

void CpuPlugin::device_close(oar_device_t device) {
  if (device == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(devices_mutex_);
    oar::sdk::require(devices_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                      "device_close: not an open cpu device");
  }
  release_device(device);
}

void CpuPlugin::release_device(oar_device_s* device) {
  // Streams first: their pending work may still touch the allocations.
  QueueStreams::release_device(device);
  auto allocations = allocations_.take_all(device);
  if (!allocations.empty()) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "device closed with " +
                                             std::to_string(allocations.size()) +
                                             " allocation(s) still alive; freeing them");
  }
  for (auto& [pointer, allocation] : allocations) free_bytes(device, pointer, allocation.size);
  delete device;
}

void CpuPlugin::device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total) {
  require_not_null(device, "device");
  require_not_null(out_free, "out_free");
  require_not_null(out_total, "out_total");
  uint64_t available = available_memory();
  *out_free = available;
  *out_total = properties_.total_memory;
}

}  // namespace oar::cpu
