// A fake libamdhip64.so.5 for the hip plugin's tests: the HIP runtime entry
// points the plugin uses (runtime.h), implemented over host memory. It runs
// the plugin's runtime logic (enumeration, properties, memory, streams,
// events, host callbacks, error mapping, shutdown order) on machines without
// a GPU. It is NOT a device: kernel launches are checked against the
// runtime's limits and recorded (name, grid, block, parameter bytes), never
// run, so no result computed through it means anything, and it must never be
// used to certify.
//
// Work on a stream is queued and runs when the stream is synchronized or
// queried (a query first answers hipErrorNotReady, then runs the work), so
// asynchrony is visible to the tests.
//
// Switches, read at hipInit:
//   OAR_HIP_FAKE_INIT_ERROR=<hipError_t>  hipInit fails with that code
//   OAR_HIP_FAKE_DEVICES=<n>              n devices (default 1; 0: hipInit says
//                                         hipErrorNoDevice, as the runtime does)
//   OAR_HIP_FAKE_ARCH=<gfx>[,<gfx>...]    gcnArchName per device (default gfx90a;
//                                         ":sramecc+:xnack-" is appended)
//   OAR_HIP_FAKE_MEMORY=<bytes>           memory per device (default 1 GiB);
//                                         hipMalloc beyond it: hipErrorOutOfMemory
//   OAR_HIP_FAKE_FAULT_AFTER=<n>          the asynchronous operation (copy, memset,
//                                         launch) after the first n faults when it
//                                         runs: the device gets the sticky
//                                         hipErrorIllegalAddress, the rest of the
//                                         queued work (host functions too) never runs
//   OAR_HIP_FAKE_FAULT_KERNEL=<name>      a launch of that kernel faults the same way
// hipModuleLoadData reads a clang offload bundle as the runtime does and
// fails with hipErrorNoBinaryForGpu unless it holds a code object for the
// current device's processor; hipModuleGetFunction fails unless the name is
// a symbol of that code object.
// Inspection (for the tests, by dlsym): oar_hip_fake_log() lists the calls
// that create and destroy objects, in order; oar_hip_fake_live() counts the
// objects alive (allocations, streams, events, modules);
// oar_hip_fake_launch_count() / oar_hip_fake_launch(i, ...) return the
// launches.
#define __HIP_PLATFORM_AMD__
#include <hip/hip_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_gpu_runtime.h"

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

struct Device {
  std::string arch;
  hipError_t sticky = hipSuccess;
  size_t used = 0;
};

}  // namespace

using oar_fake::Op;

struct ihipStream_t {
  int device = 0;
  std::deque<Op> pending;
};

struct ihipEvent_t {
  int device = 0;
  bool timing = true;
  bool recorded = false;
  bool complete = true;
  ihipStream_t* stream = nullptr;
  std::chrono::steady_clock::time_point when;
};

struct ihipModule_t {
  int device = 0;
  std::string code_object;  // the device's entry of the bundle
};

struct ihipModuleSymbol_t {
  ihipModule_t* module = nullptr;
  std::string name;
};

namespace {

struct Allocation {
  size_t size = 0;
  int device = 0;
  bool host = false;
};

constexpr oar_fake::Codes<hipError_t> kCodes{hipSuccess, hipErrorInvalidHandle, hipErrorNotReady};
using oar_fake::env_long;
using oar_fake::Launch;  // one hipModuleLaunchKernel

struct State
    : oar_fake::Core<ihipStream_t, ihipEvent_t, ihipModule_t, ihipModuleSymbol_t, Allocation> {
  std::vector<Device> devices;
};

State& state() {
  static State s;
  return s;
}

thread_local int current = 0;  // HIP's current device: 0 until hipSetDevice

void log_call(const std::string& what) { state().log += what + ";"; }

// Runs |stream|'s queued work in order; a fault stops it for good.
void drain(ihipStream_t* stream) {
  State& s = state();
  oar_fake::drain(stream->pending, s.devices[size_t(stream->device)].sticky, hipSuccess,
                  hipErrorIllegalAddress, s.fault_after, s.ops_run);
}

hipError_t sticky() { return state().devices[size_t(current)].sticky; }

hipError_t enqueue(hipStream_t stream, Op op) {
  if (stream == nullptr || state().streams.count(stream) == 0) return hipErrorInvalidHandle;
  const hipError_t error = state().devices[size_t(stream->device)].sticky;
  if (error != hipSuccess) return error;
  stream->pending.push_back(std::move(op));
  return hipSuccess;
}

void drain_device(int device) {
  for (ihipStream_t* stream : state().streams) {
    if (stream->device == device) drain(stream);
  }
}

// The allocation holding [address, address + size), or nullptr.
const Allocation* find(const void* pointer, size_t size) {
  return oar_fake::find_allocation(state().allocations, uintptr_t(pointer), size);
}

const std::map<int, const char*>& error_names() {
  static const std::map<int, const char*> names = {
      {hipSuccess, "hipSuccess"},
      {hipErrorInvalidValue, "hipErrorInvalidValue"},
      {hipErrorOutOfMemory, "hipErrorOutOfMemory"},
      {hipErrorNotInitialized, "hipErrorNotInitialized"},
      {hipErrorInsufficientDriver, "hipErrorInsufficientDriver"},
      {hipErrorNoDevice, "hipErrorNoDevice"},
      {hipErrorInvalidDevice, "hipErrorInvalidDevice"},
      {hipErrorInvalidImage, "hipErrorInvalidImage"},
      {hipErrorNoBinaryForGpu, "hipErrorNoBinaryForGpu"},
      {hipErrorInvalidHandle, "hipErrorInvalidHandle"},
      {hipErrorNotFound, "hipErrorNotFound"},
      {hipErrorNotReady, "hipErrorNotReady"},
      {hipErrorIllegalAddress, "hipErrorIllegalAddress"},
      {hipErrorUnknown, "hipErrorUnknown"},
  };
  return names;
}

// The code object for |arch| in a clang offload bundle: the magic
// "__CLANG_OFFLOAD_BUNDLE__", a u64 entry count, then per entry its u64
// offset, u64 size, u64 id length and id ("hipv4-amdgcn-amd-amdhsa--gfx90a").
// Returns hipErrorInvalidImage for no bundle, hipErrorNoBinaryForGpu when no
// entry is for |arch|.
hipError_t code_object_for(const void* image, const std::string& arch, std::string* out) {
  const char* bytes = static_cast<const char*>(image);
  static const char kMagic[] = "__CLANG_OFFLOAD_BUNDLE__";
  if (std::memcmp(bytes, kMagic, 24) != 0) return hipErrorInvalidImage;
  uint64_t entries = 0;
  std::memcpy(&entries, bytes + 24, 8);
  size_t at = 32;
  for (uint64_t i = 0; i < entries && i < 1024; ++i) {
    uint64_t offset = 0, size = 0, id_size = 0;
    std::memcpy(&offset, bytes + at, 8);
    std::memcpy(&size, bytes + at + 8, 8);
    std::memcpy(&id_size, bytes + at + 16, 8);
    if (id_size > 4096) return hipErrorInvalidImage;
    const std::string id(bytes + at + 24, id_size);
    at += 24 + id_size;
    // The processor, optionally followed by features (":sramecc+").
    const std::string suffix = "--" + arch;
    const size_t where = id.find(suffix);
    if (id.rfind("hip", 0) == 0 && where != std::string::npos &&
        (where + suffix.size() == id.size() || id[where + suffix.size()] == ':')) {
      out->assign(bytes + offset, size);
      return hipSuccess;
    }
  }
  return hipErrorNoBinaryForGpu;
}

}  // namespace

#define LOCK std::lock_guard<std::recursive_mutex> lock(state().mutex)
#define REQUIRE_INIT \
  if (!state().initialized) return hipErrorNotInitialized

// --- inspection ---------------------------------------------------------------

FAKE_EXPORT const char* oar_hip_fake_log() {
  LOCK;
  static std::string copy;
  copy = state().log;
  return copy.c_str();
}

FAKE_EXPORT int oar_hip_fake_live() {
  LOCK;
  return state().live();
}

FAKE_EXPORT size_t oar_hip_fake_launch_count() {
  LOCK;
  return state().launches.size();
}

// The i-th launch since the last oar_hip_fake_clear_launches(): the kernel's
// name (NUL-terminated, up to |name_size|), grid, block, shared bytes and the
// parameter buffer (valid until the next clear); false past the end.
FAKE_EXPORT bool oar_hip_fake_launch(size_t i, char* name, size_t name_size, unsigned* grid,
                                     unsigned* block, unsigned* shared, const void** params,
                                     size_t* params_size) {
  LOCK;
  return oar_fake::copy_launch(state().launches, i, name, name_size, grid, block, shared, params,
                               params_size);
}

FAKE_EXPORT void oar_hip_fake_clear_launches() {
  LOCK;
  state().launches.clear();
}

// --- initialization, errors, devices ---------------------------------------------

FAKE_EXPORT hipError_t hipInit(unsigned int) {
  LOCK;
  State& s = state();
  s.reset();  // a new plugin instance starts from scratch
  s.devices.clear();
  s.launches.clear();
  long code = env_long("OAR_HIP_FAKE_INIT_ERROR", 0);
  if (code != 0) return hipError_t(code);
  const long devices = env_long("OAR_HIP_FAKE_DEVICES", 1);
  if (devices <= 0) return hipErrorNoDevice;
  s.read_switches("OAR_HIP_FAKE_");
  const char* arch = std::getenv("OAR_HIP_FAKE_ARCH");
  const std::vector<std::string> archs = oar_fake::split_list(arch != nullptr ? arch : "gfx90a");
  for (long i = 0; i < devices; ++i) {
    s.devices.push_back({archs[std::min(size_t(i), archs.size() - 1)]});
  }
  current = 0;
  s.initialized = true;
  log_call("hipInit");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDriverGetVersion(int* version) {
  *version = 50223;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipRuntimeGetVersion(int* version) {
  *version = 50222000;  // 5.2.22000, HIP's encoding
  return hipSuccess;
}

FAKE_EXPORT const char* hipGetErrorName(hipError_t error) {
  auto it = error_names().find(int(error));
  return it != error_names().end() ? it->second : "hipErrorUnknown";
}

FAKE_EXPORT const char* hipGetErrorString(hipError_t) { return "(fake HIP runtime)"; }

FAKE_EXPORT hipError_t hipGetDeviceCount(int* count) {
  LOCK;
  REQUIRE_INIT;
  *count = int(state().devices.size());
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipGetDeviceProperties(hipDeviceProp_t* props, int device) {
  LOCK;
  REQUIRE_INIT;
  if (device < 0 || size_t(device) >= state().devices.size()) return hipErrorInvalidDevice;
  std::memset(props, 0, sizeof *props);
  std::snprintf(props->name, sizeof props->name, "OAR fake HIP device %d (no GPU)", device);
  std::snprintf(props->gcnArchName, sizeof props->gcnArchName, "%s:sramecc+:xnack-",
                state().devices[size_t(device)].arch.c_str());
  props->totalGlobalMem = state().memory;
  props->multiProcessorCount = 60 + device;
  props->warpSize = 64;
  props->maxThreadsPerBlock = 1024;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipSetDevice(int device) {
  LOCK;
  REQUIRE_INIT;
  if (device < 0 || size_t(device) >= state().devices.size()) return hipErrorInvalidDevice;
  current = device;
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipDeviceSynchronize() {
  LOCK;
  REQUIRE_INIT;
  drain_device(current);
  return sticky();
}

FAKE_EXPORT hipError_t hipMemGetInfo(size_t* free_bytes, size_t* total) {
  LOCK;
  REQUIRE_INIT;
  *total = state().memory;
  *free_bytes = state().memory - state().devices[size_t(current)].used;
  return sticky();
}

// --- memory --------------------------------------------------------------------------

FAKE_EXPORT hipError_t hipMalloc(void** pointer, size_t size) {
  LOCK;
  REQUIRE_INIT;
  if (hipError_t r = sticky()) return r;
  if (pointer == nullptr) return hipErrorInvalidValue;
  Device& device = state().devices[size_t(current)];
  if (size > state().memory - device.used) return hipErrorOutOfMemory;
  void* memory = std::aligned_alloc(256, (std::max<size_t>(size, 1) + 255) / 256 * 256);
  if (memory == nullptr) return hipErrorOutOfMemory;
  device.used += size;
  state().allocations[uintptr_t(memory)] = {size, current, false};
  *pointer = memory;
  log_call("hipMalloc");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipFree(void* pointer) {
  LOCK;
  REQUIRE_INIT;
  auto it = state().allocations.find(uintptr_t(pointer));
  if (it == state().allocations.end() || it->second.host) return hipErrorInvalidValue;
  drain_device(it->second.device);  // hipFree waits for the device's work
  state().devices[size_t(it->second.device)].used -= it->second.size;
  std::free(pointer);
  state().allocations.erase(it);
  log_call("hipFree");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostMalloc(void** pointer, size_t size, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (hipError_t r = sticky()) return r;
  void* memory = std::aligned_alloc(256, (std::max<size_t>(size, 1) + 255) / 256 * 256);
  if (memory == nullptr) return hipErrorOutOfMemory;
  state().allocations[uintptr_t(memory)] = {size, current, true};
  *pointer = memory;
  log_call("hipHostMalloc");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipHostFree(void* pointer) {
  LOCK;
  REQUIRE_INIT;
  auto it = state().allocations.find(uintptr_t(pointer));
  if (it == state().allocations.end() || !it->second.host) return hipErrorInvalidValue;
  std::free(pointer);
  state().allocations.erase(it);
  log_call("hipHostFree");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipMemcpyHtoDAsync(hipDeviceptr_t dst, void* src, size_t size,
                                          hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(dst, size) == nullptr) return hipErrorInvalidValue;
  return enqueue(stream, {Op::kWork, [=] { std::memcpy(dst, src, size); }});
}

FAKE_EXPORT hipError_t hipMemcpyDtoHAsync(void* dst, hipDeviceptr_t src, size_t size,
                                          hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(src, size) == nullptr) return hipErrorInvalidValue;
  return enqueue(stream, {Op::kWork, [=] { std::memcpy(dst, src, size); }});
}

FAKE_EXPORT hipError_t hipMemcpyDtoDAsync(hipDeviceptr_t dst, hipDeviceptr_t src, size_t size,
                                          hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(dst, size) == nullptr || find(src, size) == nullptr) return hipErrorInvalidValue;
  return enqueue(stream, {Op::kWork, [=] { std::memmove(dst, src, size); }});
}

FAKE_EXPORT hipError_t hipMemsetD8Async(hipDeviceptr_t dst, unsigned char value, size_t size,
                                        hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(dst, size) == nullptr) return hipErrorInvalidValue;
  return enqueue(stream, {Op::kWork, [=] { std::memset(dst, value, size); }});
}

// --- streams -------------------------------------------------------------------------

FAKE_EXPORT hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (hipError_t r = sticky()) return r;
  auto* s = new ihipStream_t;
  s->device = current;
  state().streams.insert(s);
  *stream = s;
  log_call("hipStreamCreateWithFlags");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamDestroy(hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (state().streams.erase(stream) == 0) return hipErrorInvalidHandle;
  drain(stream);
  for (ihipEvent_t* e : state().events) {
    if (e->stream == stream) e->stream = nullptr;
  }
  delete stream;
  log_call("hipStreamDestroy");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipStreamSynchronize(hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (state().streams.count(stream) == 0) return hipErrorInvalidHandle;
  drain(stream);
  return state().devices[size_t(stream->device)].sticky;
}

FAKE_EXPORT hipError_t hipStreamQuery(hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  if (state().streams.count(stream) == 0) return hipErrorInvalidHandle;
  return oar_fake::query(
      state().devices[size_t(stream->device)].sticky, stream->pending.empty(),
      [&] { drain(stream); }, kCodes);
}

FAKE_EXPORT hipError_t hipStreamWaitEvent(hipStream_t stream, hipEvent_t event, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.count(event) == 0) return hipErrorInvalidHandle;
  ihipStream_t* other = event->stream;
  return enqueue(stream, {Op::kHost, [=] {
                            if (other != nullptr && state().streams.count(other) != 0) drain(other);
                          }});
}

// Called with hipSuccess once the work before it ran; never after a fault
// (the runtime drops the device's queued work).
FAKE_EXPORT hipError_t hipStreamAddCallback(hipStream_t stream, hipStreamCallback_t fn,
                                            void* user_data, unsigned int flags) {
  LOCK;
  REQUIRE_INIT;
  if (fn == nullptr || flags != 0) return hipErrorInvalidValue;
  return enqueue(stream, {Op::kHost, [=] { fn(stream, hipSuccess, user_data); }});
}

// --- events --------------------------------------------------------------------------

FAKE_EXPORT hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned int flags) {
  LOCK;
  REQUIRE_INIT;
  if (hipError_t r = sticky()) return r;
  auto* e = new ihipEvent_t;
  e->device = current;
  e->timing = (flags & hipEventDisableTiming) == 0;
  state().events.insert(e);
  *event = e;
  log_call("hipEventCreateWithFlags");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipEventDestroy(hipEvent_t event) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.erase(event) == 0) return hipErrorInvalidHandle;
  delete event;  // queued records find it gone: they only touch live events
  log_call("hipEventDestroy");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  LOCK;
  REQUIRE_INIT;
  return oar_fake::record(state().events, event, stream, enqueue, kCodes);
}

FAKE_EXPORT hipError_t hipEventQuery(hipEvent_t event) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.count(event) == 0) return hipErrorInvalidHandle;
  return oar_fake::query(
      state().devices[size_t(event->device)].sticky, event->complete,
      [&] {
        if (event->stream != nullptr) drain(event->stream);
      },
      kCodes);
}

FAKE_EXPORT hipError_t hipEventSynchronize(hipEvent_t event) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.count(event) == 0) return hipErrorInvalidHandle;
  if (!event->complete && event->stream != nullptr) drain(event->stream);
  return state().devices[size_t(event->device)].sticky;
}

FAKE_EXPORT hipError_t hipEventElapsedTime(float* ms, hipEvent_t start, hipEvent_t end) {
  LOCK;
  REQUIRE_INIT;
  return oar_fake::elapsed(state().events, ms, start, end, kCodes);
}

// --- modules and launches ----------------------------------------------------------------

FAKE_EXPORT hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  LOCK;
  REQUIRE_INIT;
  if (hipError_t r = sticky()) return r;
  if (module == nullptr || image == nullptr) return hipErrorInvalidValue;
  std::string code_object;
  const hipError_t r = code_object_for(image, state().devices[size_t(current)].arch, &code_object);
  if (r != hipSuccess) return r;
  // A code object is an ELF file (e_machine EM_AMDGPU, 224).
  uint16_t machine = 0;
  if (code_object.size() < 64) return hipErrorInvalidImage;
  std::memcpy(&machine, code_object.data() + 18, 2);
  if (code_object.compare(0, 4,
                          "\x7f"
                          "ELF") != 0 ||
      machine != 224)
    return hipErrorInvalidImage;
  auto* m = new ihipModule_t;
  m->device = current;
  m->code_object = std::move(code_object);
  state().modules.insert(m);
  *module = m;
  log_call("hipModuleLoadData");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleUnload(hipModule_t module) {
  LOCK;
  REQUIRE_INIT;
  if (state().modules.erase(module) == 0) return hipErrorInvalidHandle;
  delete module;
  log_call("hipModuleUnload");
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module,
                                            const char* name) {
  LOCK;
  REQUIRE_INIT;
  if (state().modules.count(module) == 0) return hipErrorInvalidHandle;
  // The kernel's descriptor symbol "<name>.kd" is in the code object's
  // string table.
  const std::string symbol = std::string(name) + ".kd" + '\0';
  if (module->code_object.find(symbol) == std::string::npos) return hipErrorNotFound;
  state().functions.push_back(std::make_unique<ihipModuleSymbol_t>());
  state().functions.back()->module = module;
  state().functions.back()->name = name;
  *function = state().functions.back().get();
  return hipSuccess;
}

FAKE_EXPORT hipError_t hipModuleLaunchKernel(hipFunction_t function, unsigned int gx,
                                             unsigned int gy, unsigned int gz, unsigned int bx,
                                             unsigned int by, unsigned int bz, unsigned int shared,
                                             hipStream_t stream, void** params, void** extra) {
  LOCK;
  REQUIRE_INIT;
  if (hipError_t r = sticky()) return r;
  // What the runtime refuses before running anything: an AMD GPU's limits
  // (grid x * block x < 2^32, <= 1024 threads a block, <= 64 KiB of LDS),
  // and parameters given neither as an array nor as one buffer.
  if (function == nullptr) return hipErrorInvalidHandle;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      uint64_t(gx) * bx >= (uint64_t(1) << 32) || uint64_t(bx) * by * bz > 1024 ||
      shared > 64 * 1024)
    return hipErrorInvalidValue;
  if (function->module->device != current) return hipErrorInvalidDevice;
  Launch launch;
  launch.name = function->name;
  launch.grid[0] = gx, launch.grid[1] = gy, launch.grid[2] = gz;
  launch.block[0] = bx, launch.block[1] = by, launch.block[2] = bz;
  launch.shared = shared;
  if (extra != nullptr) {
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    for (size_t i = 0; extra[i] != HIP_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == HIP_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const size_t*>(extra[i + 1]);
      } else {
        return hipErrorInvalidValue;
      }
    }
    if (buffer == nullptr || size == nullptr || *size > 4096 || params != nullptr)
      return hipErrorInvalidValue;
    launch.params.assign(static_cast<const char*>(buffer), *size);  // copied now
  } else if (params == nullptr) {
    return hipErrorInvalidValue;
  }
  state().launches.push_back(launch);
  const std::string record = "launch " + function->name;
  Op op{Op::kWork, [record] { log_call(record); }};
  op.faults = function->name == state().fault_kernel;
  return enqueue(stream, std::move(op));
}
