// A fake libcuda.so.1 for the cuda plugin's tests: the driver entry points the
// plugin uses (driver.h), implemented over host memory. It runs the plugin's
// runtime logic (enumeration, properties, memory, streams, events, host
// callbacks, error mapping, shutdown order) on machines without a GPU. It is
// NOT a device: kernel launches are checked against the driver's limits and
// recorded (name, grid, block, parameter bytes), never run,
// so no result computed through it means anything, and it must never be used
// to certify.
//
// Work on a stream is queued and runs when the stream is synchronized or
// queried (a query first answers CUDA_ERROR_NOT_READY, then runs the work),
// so asynchrony is visible to the tests.
//
// Switches, read at cuInit:
//   OAR_CUDA_FAKE_INIT_ERROR=<CUresult>  cuInit fails with that code
//   OAR_CUDA_FAKE_DEVICES=<n>            n devices (default 1; 0: cuInit says
//                                        CUDA_ERROR_NO_DEVICE, as the driver does)
//   OAR_CUDA_FAKE_CC=<cc>[,<cc>...]      compute capability per device (default 80)
//   OAR_CUDA_FAKE_MEMORY=<bytes>         device memory per device (default 1 GiB);
//                                        cuMemAlloc beyond it: CUDA_ERROR_OUT_OF_MEMORY
//   OAR_CUDA_FAKE_FAULT_AFTER=<n>        the asynchronous operation (copy, memset,
//                                        launch) after the first n faults when it
//                                        runs: the context gets the sticky
//                                        CUDA_ERROR_ILLEGAL_ADDRESS, the rest of the
//                                        queued work (host functions too) never runs
//   OAR_CUDA_FAKE_FAULT_KERNEL=<name>    a launch of that kernel faults the same way
// and one read at each call:
//   OAR_CUDA_FAKE_STALL=1                queued work does not run, as behind an NCCL
//                                        collective whose peer died: queries answer
//                                        CUDA_ERROR_NOT_READY; a synchronize would
//                                        hang, so it logs "stalled wait" and runs the
//                                        work (a test asserts it never happened)
// Inspection (for the tests, by dlsym): oar_cuda_fake_log() lists the calls
// that create and destroy objects, in order; oar_cuda_fake_live() counts the
// objects alive (contexts retained, allocations, streams, events, modules);
// oar_cuda_fake_launch_count() / oar_cuda_fake_launch(i, ...) return the
// launches (see there).
#include <cuda.h>

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

struct CUctx_st {
  int device = 0;
  int refs = 0;
  CUresult sticky = CUDA_SUCCESS;
  size_t used = 0;
};

using oar_fake::Op;

struct CUstream_st {
  CUctx_st* ctx = nullptr;
  std::deque<Op> pending;
};

struct CUevent_st {
  CUctx_st* ctx = nullptr;
  bool timing = true;
  bool recorded = false;
  bool complete = true;
  CUstream_st* stream = nullptr;
  std::chrono::steady_clock::time_point when;
};

struct CUmod_st {
  CUctx_st* ctx = nullptr;
  std::string image;
};

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;
};

namespace {

struct Allocation {
  size_t size = 0;
  CUctx_st* ctx = nullptr;
  bool host = false;
};

constexpr oar_fake::Codes<CUresult> kCodes{CUDA_SUCCESS, CUDA_ERROR_INVALID_HANDLE,
                                           CUDA_ERROR_NOT_READY};
using oar_fake::env_long;
using oar_fake::Launch;  // one cuLaunchKernel

struct State : oar_fake::Core<CUstream_st, CUevent_st, CUmod_st, CUfunc_st, Allocation> {
  int devices = 1;
  std::vector<int> cc;
  std::vector<std::unique_ptr<CUctx_st>> contexts;  // each device's primary context
};

State& state() {
  static State s;
  return s;
}

thread_local CUctx_st* current = nullptr;

void log_call(const std::string& what) {
  State& s = state();
  s.log += what + ";";
}

// Runs |stream|'s queued work in order; a fault stops it for good.
void drain(CUstream_st* stream) {
  State& s = state();
  oar_fake::drain(stream->pending, stream->ctx->sticky, CUDA_SUCCESS, CUDA_ERROR_ILLEGAL_ADDRESS,
                  s.fault_after, s.ops_run);
}

bool stalled() {
  const char* value = std::getenv("OAR_CUDA_FAKE_STALL");
  return value != nullptr && std::string(value) == "1";
}

// A synchronize that would block for good (see OAR_CUDA_FAKE_STALL).
void note_stalled_wait(const CUstream_st* stream) {
  if (stream != nullptr && stalled() && !stream->pending.empty()) log_call("stalled wait");
}

CUresult sticky() { return current == nullptr ? CUDA_ERROR_INVALID_CONTEXT : current->sticky; }

CUresult enqueue(CUstream stream, Op op) {
  if (stream == nullptr || state().streams.count(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (stream->ctx->sticky != CUDA_SUCCESS) return stream->ctx->sticky;
  stream->pending.push_back(std::move(op));
  return CUDA_SUCCESS;
}

void drain_context(CUctx_st* ctx) {
  for (CUstream_st* stream : state().streams) {
    if (stream->ctx == ctx) drain(stream);
  }
}

// The allocation holding [address, address + size), or nullptr.
const Allocation* find(uintptr_t address, size_t size) {
  return oar_fake::find_allocation(state().allocations, address, size);
}

const char* const kErrorNames[][2] = {
    {"0", "CUDA_SUCCESS"},
    {"1", "CUDA_ERROR_INVALID_VALUE"},
    {"2", "CUDA_ERROR_OUT_OF_MEMORY"},
    {"3", "CUDA_ERROR_NOT_INITIALIZED"},
    {"100", "CUDA_ERROR_NO_DEVICE"},
    {"101", "CUDA_ERROR_INVALID_DEVICE"},
    {"201", "CUDA_ERROR_INVALID_CONTEXT"},
    {"218", "CUDA_ERROR_INVALID_PTX"},
    {"400", "CUDA_ERROR_INVALID_HANDLE"},
    {"500", "CUDA_ERROR_NOT_FOUND"},
    {"600", "CUDA_ERROR_NOT_READY"},
    {"700", "CUDA_ERROR_ILLEGAL_ADDRESS"},
    {"999", "CUDA_ERROR_UNKNOWN"},
};

}  // namespace

#define LOCK std::lock_guard<std::recursive_mutex> lock(state().mutex)
#define REQUIRE_INIT \
  if (!state().initialized) return CUDA_ERROR_NOT_INITIALIZED

// --- inspection ---------------------------------------------------------------

FAKE_EXPORT const char* oar_cuda_fake_log() {
  LOCK;
  static std::string copy;
  copy = state().log;
  return copy.c_str();
}

FAKE_EXPORT int oar_cuda_fake_live() {
  LOCK;
  State& s = state();
  int live = s.live();
  for (auto& ctx : s.contexts) live += ctx->refs;
  return live;
}

// --- initialization, errors, devices ---------------------------------------------

FAKE_EXPORT CUresult cuInit(unsigned int) {
  LOCK;
  State& s = state();
  // As the driver: a second cuInit while a context is retained (a program
  // using the driver beside the plugin, e.g. bench/cuda_bench.cc) changes
  // nothing.
  if (s.initialized) {
    for (auto& ctx : s.contexts) {
      if (ctx->refs > 0) return CUDA_SUCCESS;
    }
  }
  // A new plugin instance starts from scratch (objects a test leaked are
  // dropped with the old state, not freed).
  s.reset();
  s.cc.clear();
  s.contexts.clear();
  long code = env_long("OAR_CUDA_FAKE_INIT_ERROR", 0);
  if (code != 0) return CUresult(code);
  s.devices = int(env_long("OAR_CUDA_FAKE_DEVICES", 1));
  if (s.devices <= 0) return CUDA_ERROR_NO_DEVICE;
  s.read_switches("OAR_CUDA_FAKE_");
  const char* cc = std::getenv("OAR_CUDA_FAKE_CC");
  for (const std::string& item : oar_fake::split_list(cc != nullptr ? cc : "80"))
    s.cc.push_back(std::atoi(item.c_str()));
  for (int i = 0; i < s.devices; ++i) {
    s.contexts.push_back(std::make_unique<CUctx_st>());
    s.contexts.back()->device = i;
  }
  s.initialized = true;
  log_call("cuInit");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDriverGetVersion(int* version) {
  *version = 13000;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuGetErrorName(CUresult error, const char** name) {
  for (const auto& entry : kErrorNames) {
    if (std::atoi(entry[0]) == int(error)) {
      *name = entry[1];
      return CUDA_SUCCESS;
    }
  }
  *name = nullptr;
  return CUDA_ERROR_INVALID_VALUE;
}

FAKE_EXPORT CUresult cuGetErrorString(CUresult error, const char** text) {
  const char* name = nullptr;
  if (cuGetErrorName(error, &name) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_VALUE;
  *text = "(fake driver)";
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetCount(int* count) {
  LOCK;
  REQUIRE_INIT;
  *count = state().devices;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  LOCK;
  REQUIRE_INIT;
  if (ordinal < 0 || ordinal >= state().devices) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  LOCK;
  REQUIRE_INIT;
  std::snprintf(name, size_t(length), "OAR fake CUDA device %d (no GPU)", int(device));
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceTotalMem(size_t* bytes, CUdevice) {
  LOCK;
  REQUIRE_INIT;
  *bytes = state().memory;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDeviceGetAttribute(int* value, CUdevice_attribute attribute,
                                          CUdevice device) {
  LOCK;
  REQUIRE_INIT;
  State& s = state();
  const int cc = s.cc[std::min(size_t(device), s.cc.size() - 1)];
  switch (attribute) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
      *value = cc / 10;
      break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
      *value = cc % 10;
      break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
      *value = 4 + int(device);
      break;
    default:
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

// --- contexts ------------------------------------------------------------------------

FAKE_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext* ctx, CUdevice device) {
  LOCK;
  REQUIRE_INIT;
  if (device < 0 || device >= state().devices) return CUDA_ERROR_INVALID_DEVICE;
  CUctx_st* c = state().contexts[size_t(device)].get();
  ++c->refs;
  *ctx = c;
  log_call("cuDevicePrimaryCtxRetain(" + std::to_string(device) + ")");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice device) {
  LOCK;
  REQUIRE_INIT;
  CUctx_st* c = state().contexts[size_t(device)].get();
  if (c->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--c->refs == 0) c->sticky = CUDA_SUCCESS;  // a released primary context is reset
  log_call("cuDevicePrimaryCtxRelease(" + std::to_string(device) + ")");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  LOCK;
  REQUIRE_INIT;
  if (ctx != nullptr && ctx->refs == 0) return CUDA_ERROR_INVALID_CONTEXT;
  current = ctx;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxSynchronize() {
  LOCK;
  REQUIRE_INIT;
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  drain_context(current);
  return current->sticky;
}

FAKE_EXPORT CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
  LOCK;
  REQUIRE_INIT;
  if (current == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  *total = state().memory;
  *free_bytes = state().memory - current->used;
  return current->sticky;
}

// --- memory --------------------------------------------------------------------------

FAKE_EXPORT CUresult cuMemAlloc(CUdeviceptr* pointer, size_t size) {
  LOCK;
  REQUIRE_INIT;
  if (CUresult r = sticky()) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (size > state().memory - current->used) return CUDA_ERROR_OUT_OF_MEMORY;
  void* memory = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  current->used += size;
  state().allocations[uintptr_t(memory)] = {size, current, false};
  *pointer = CUdeviceptr(uintptr_t(memory));
  log_call("cuMemAlloc");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFree(CUdeviceptr pointer) {
  LOCK;
  REQUIRE_INIT;
  auto it = state().allocations.find(uintptr_t(pointer));
  if (it == state().allocations.end() || it->second.host) return CUDA_ERROR_INVALID_VALUE;
  drain_context(it->second.ctx);  // cuMemFree waits for the device's work
  it->second.ctx->used -= it->second.size;
  std::free(reinterpret_cast<void*>(uintptr_t(pointer)));
  state().allocations.erase(it);
  log_call("cuMemFree");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemHostAlloc(void** pointer, size_t size, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (CUresult r = sticky()) return r;
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  void* memory = std::aligned_alloc(256, (size + 255) / 256 * 256);
  if (memory == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  state().allocations[uintptr_t(memory)] = {size, current, true};
  *pointer = memory;
  log_call("cuMemHostAlloc");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemFreeHost(void* pointer) {
  LOCK;
  REQUIRE_INIT;
  auto it = state().allocations.find(uintptr_t(pointer));
  if (it == state().allocations.end() || !it->second.host) return CUDA_ERROR_INVALID_VALUE;
  std::free(pointer);
  state().allocations.erase(it);
  log_call("cuMemFreeHost");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyHtoDAsync(CUdeviceptr dst, const void* src, size_t size,
                                       CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(uintptr_t(dst), size) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream,
                 {Op::kWork, [=] { std::memcpy(reinterpret_cast<void*>(dst), src, size); }});
}

FAKE_EXPORT CUresult cuMemcpyDtoHAsync(void* dst, CUdeviceptr src, size_t size, CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(uintptr_t(src), size) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream,
                 {Op::kWork, [=] { std::memcpy(dst, reinterpret_cast<void*>(src), size); }});
}

FAKE_EXPORT CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(uintptr_t(dst), size) == nullptr || find(uintptr_t(src), size) == nullptr)
    return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream, {Op::kWork, [=] {
                            std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src),
                                         size);
                          }});
}

FAKE_EXPORT CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t size,
                                     CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (find(uintptr_t(dst), size) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream,
                 {Op::kWork, [=] { std::memset(reinterpret_cast<void*>(dst), value, size); }});
}

// Peer access: OAR_CUDA_FAKE_PEER=0 says no two devices reach each other
// directly (default: they all do); enabling is logged.
FAKE_EXPORT CUresult cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  LOCK;
  REQUIRE_INIT;
  if (device < 0 || device >= state().devices || peer < 0 || peer >= state().devices)
    return CUDA_ERROR_INVALID_DEVICE;
  *can = device != peer && env_long("OAR_CUDA_FAKE_PEER", 1) != 0;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (current == nullptr || peer == nullptr || peer == current) return CUDA_ERROR_INVALID_VALUE;
  log_call("cuCtxEnablePeerAccess(" + std::to_string(current->device) + "->" +
           std::to_string(peer->device) + ")");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                       CUcontext src_ctx, size_t size, CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  const Allocation* to = find(uintptr_t(dst), size);
  const Allocation* from = find(uintptr_t(src), size);
  if (to == nullptr || from == nullptr || to->ctx != dst_ctx || from->ctx != src_ctx)
    return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream, {Op::kWork, [=] {
                            std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<void*>(src),
                                         size);
                          }});
}

// --- streams -------------------------------------------------------------------------

FAKE_EXPORT CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (CUresult r = sticky()) return r;
  auto* s = new CUstream_st;
  s->ctx = current;
  state().streams.insert(s);
  *stream = s;
  log_call("cuStreamCreate");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamDestroy(CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (state().streams.erase(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  drain(stream);
  for (CUevent_st* e : state().events) {
    if (e->stream == stream) e->stream = nullptr;
  }
  delete stream;
  log_call("cuStreamDestroy");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuStreamSynchronize(CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (state().streams.count(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  note_stalled_wait(stream);
  drain(stream);
  return stream->ctx->sticky;
}

FAKE_EXPORT CUresult cuStreamQuery(CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  if (state().streams.count(stream) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (stalled() && !stream->pending.empty()) return CUDA_ERROR_NOT_READY;
  return oar_fake::query(
      stream->ctx->sticky, stream->pending.empty(), [&] { drain(stream); }, kCodes);
}

FAKE_EXPORT CUresult cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.count(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
  CUstream_st* other = event->stream;
  return enqueue(stream, {Op::kHost, [=] {
                            if (other != nullptr && state().streams.count(other) != 0) drain(other);
                          }});
}

FAKE_EXPORT CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* user_data) {
  LOCK;
  REQUIRE_INIT;
  return enqueue(stream, {Op::kHost, [=] { fn(user_data); }});
}

// --- events --------------------------------------------------------------------------

FAKE_EXPORT CUresult cuEventCreate(CUevent* event, unsigned int flags) {
  LOCK;
  REQUIRE_INIT;
  if (CUresult r = sticky()) return r;
  auto* e = new CUevent_st;
  e->ctx = current;
  e->timing = (flags & CU_EVENT_DISABLE_TIMING) == 0;
  state().events.insert(e);
  *event = e;
  log_call("cuEventCreate");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventDestroy(CUevent event) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.erase(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
  // Queued records of this event find it gone: they only touch live events.
  delete event;
  log_call("cuEventDestroy");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuEventRecord(CUevent event, CUstream stream) {
  LOCK;
  REQUIRE_INIT;
  return oar_fake::record(state().events, event, stream, enqueue, kCodes);
}

FAKE_EXPORT CUresult cuEventQuery(CUevent event) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.count(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (stalled() && !event->complete && event->stream != nullptr &&
      !event->stream->pending.empty()) {
    return CUDA_ERROR_NOT_READY;
  }
  return oar_fake::query(
      event->ctx->sticky, event->complete,
      [&] {
        if (event->stream != nullptr) drain(event->stream);
      },
      kCodes);
}

FAKE_EXPORT CUresult cuEventSynchronize(CUevent event) {
  LOCK;
  REQUIRE_INIT;
  if (state().events.count(event) == 0) return CUDA_ERROR_INVALID_HANDLE;
  if (!event->complete && event->stream != nullptr) {
    note_stalled_wait(event->stream);
    drain(event->stream);
  }
  return event->ctx->sticky;
}

FAKE_EXPORT CUresult cuEventElapsedTime(float* ms, CUevent start, CUevent end) {
  LOCK;
  REQUIRE_INIT;
  return oar_fake::elapsed(state().events, ms, start, end, kCodes);
}

// --- modules and launches ----------------------------------------------------------------

FAKE_EXPORT CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  LOCK;
  REQUIRE_INIT;
  if (CUresult r = sticky()) return r;
  // A fatbin: magic 0xBA55ED50, u16 version, u16 header size, u64 payload size.
  uint32_t magic = 0;
  std::memcpy(&magic, image, 4);
  if (magic != 0xBA55ED50u) return CUDA_ERROR_INVALID_IMAGE;
  uint16_t header = 0;
  uint64_t payload = 0;
  std::memcpy(&header, static_cast<const char*>(image) + 6, 2);
  std::memcpy(&payload, static_cast<const char*>(image) + 8, 8);
  auto* m = new CUmod_st;
  m->ctx = current;
  m->image.assign(static_cast<const char*>(image), header + payload);
  state().modules.insert(m);
  *module = m;
  log_call("cuModuleLoadData");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleUnload(CUmodule module) {
  LOCK;
  REQUIRE_INIT;
  if (state().modules.erase(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  delete module;
  log_call("cuModuleUnload");
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
  LOCK;
  REQUIRE_INIT;
  if (state().modules.count(module) == 0) return CUDA_ERROR_INVALID_HANDLE;
  // The name must be in the image: as an ELF symbol (NUL-terminated) or a PTX entry.
  const std::string symbol = std::string(name) + '\0';
  if (module->image.find(symbol) == std::string::npos) return CUDA_ERROR_NOT_FOUND;
  state().functions.push_back(std::make_unique<CUfunc_st>());
  state().functions.back()->module = module;
  state().functions.back()->name = name;
  *function = state().functions.back().get();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult cuLaunchKernel(CUfunction function, unsigned int gx, unsigned int gy,
                                    unsigned int gz, unsigned int bx, unsigned int by,
                                    unsigned int bz, unsigned int shared, CUstream stream,
                                    void** params, void** extra) {
  LOCK;
  REQUIRE_INIT;
  if (CUresult r = sticky()) return r;
  // What the driver refuses before running anything: the limits of every
  // sm_80+ GPU (grid x < 2^31, y and z <= 65535, <= 1024 threads a block,
  // <= 48 KiB of static shared memory without opting in), and parameters
  // given neither as an array nor as one buffer.
  if (function == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (gx == 0 || gy == 0 || gz == 0 || gx > 0x7fffffffu || gy > 65535 || gz > 65535 || bx == 0 ||
      by == 0 || bz == 0 || uint64_t(bx) * by * bz > 1024 || bz > 64 || shared > 48 * 1024)
    return CUDA_ERROR_INVALID_VALUE;
  Launch launch;
  launch.name = function->name;
  launch.grid[0] = gx, launch.grid[1] = gy, launch.grid[2] = gz;
  launch.block[0] = bx, launch.block[1] = by, launch.block[2] = bz;
  launch.shared = shared;
  if (extra != nullptr) {
    // CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE pairs up to CU_LAUNCH_PARAM_END.
    const void* buffer = nullptr;
    const size_t* size = nullptr;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
        buffer = extra[i + 1];
      } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
        size = static_cast<const size_t*>(extra[i + 1]);
      } else {
        return CUDA_ERROR_INVALID_VALUE;
      }
    }
    if (buffer == nullptr || size == nullptr || *size > 4096 || params != nullptr)
      return CUDA_ERROR_INVALID_VALUE;
    launch.params.assign(static_cast<const char*>(buffer),
                         *size);  // copied now, as the driver does
  } else if (params == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;  // (a kernel without parameters is none of the plugin's)
  }
  state().launches.push_back(launch);
  const std::string record = "launch " + function->name + " grid(" + std::to_string(gx) + "," +
                             std::to_string(gy) + "," + std::to_string(gz) + ") block(" +
                             std::to_string(bx) + "," + std::to_string(by) + "," +
                             std::to_string(bz) + ")";
  Op op{Op::kWork, [record] { log_call(record); }};
  op.faults = function->name == state().fault_kernel;
  return enqueue(stream, std::move(op));
}

// The launches since the last oar_cuda_fake_clear_launches(), in call order:
// oar_cuda_fake_launch(i, ...) fills the kernel's name (NUL-terminated, up to
// |name_size|), grid, block, shared bytes and a pointer to the parameter
// buffer's bytes (valid until the next clear); returns false past the end.
FAKE_EXPORT size_t oar_cuda_fake_launch_count() {
  LOCK;
  return state().launches.size();
}

FAKE_EXPORT bool oar_cuda_fake_launch(size_t i, char* name, size_t name_size, unsigned* grid,
                                      unsigned* block, unsigned* shared, const void** params,
                                      size_t* params_size) {
  LOCK;
  return oar_fake::copy_launch(state().launches, i, name, name_size, grid, block, shared, params,
                               params_size);
}

FAKE_EXPORT void oar_cuda_fake_clear_launches() {
  LOCK;
  state().launches.clear();
}
