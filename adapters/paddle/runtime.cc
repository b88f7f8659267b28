// Paddle's C_DeviceInterface served through OAR's C++ API. One device type,
// "oar", whose device ids are the OAR runtime's visible devices (adapter.h).
// Every slot catches oar::Error (and anything else) and turns it into a
// C_Status after printing the message, since Paddle's status has no text.
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <utility>

#include "adapter.h"
#include "paddle/phi/backends/device_ext.h"

namespace oar_paddle {

// ---------------------------------------------------------------- state

namespace {
std::mutex g_adapter_mutex;
Adapter* g_adapter = nullptr;
bool g_adapter_failed = false;
bool g_finalized = false;            // no adapter is made again once Paddle finalized it
std::atomic<bool> g_exiting{false};  // the process is exiting: leave OAR alone
thread_local int t_current_device = 0;
}  // namespace

void log_error(const char* slot, const char* what) {
  std::fprintf(stderr, "paddle-custom-oar: %s: %s\n", slot, what);
}

bool exiting() { return g_exiting.load(std::memory_order_relaxed); }

int current_device() { return t_current_device; }

Adapter::Adapter() {
  for (oar::Device* device : runtime_.devices()) devices_.push_back(device);
  streams_.resize(devices_.size());
  staging_.resize(devices_.size());
  for (const oar::PluginRecord& record : runtime_.plugins()) {
    if (record.state == oar::PluginState::kSkipped) {
      std::fprintf(stderr, "paddle-custom-oar: OAR plugin '%s' skipped: %s\n", record.name.c_str(),
                   record.reason.c_str());
    }
  }
  if (devices_.empty()) {
    std::fprintf(stderr,
                 "paddle-custom-oar: OAR found no device; Paddle has no oar places (`oar list` "
                 "says which plugins load and why not)\n");
  }
}

Adapter* Adapter::get() {
  std::lock_guard<std::mutex> lock(g_adapter_mutex);
  if (g_adapter != nullptr || g_adapter_failed || g_finalized) return g_adapter;
  try {
    g_adapter = new Adapter();
    // Process exit. Paddle's C++ static objects (its device contexts,
    // allocators and streams) and liboar's lazily built ones die in the
    // reverse order of their construction, interleaved, while OAR's devices
    // still run their worker threads: Paddle's destructors then call the
    // slots below into a half-destroyed OAR, and a plugin's worker writes
    // into freed memory (glibc later aborts freeing its list of exit
    // handlers: "double free or corruption"). So the runtime is shut down
    // before any static object dies: in Python, from Py_AtExit (the end of
    // Py_FinalizeEx, after Python's own objects are gone and before exit());
    // elsewhere from the first exit handler that still runs before the
    // statics built after this point. From then on every slot returns at
    // once, and OAR's objects Paddle still holds are empty (OAR's rule: a
    // public object behaves after its runtime is gone).
    using AtExit = int (*)(void (*)());
    if (auto py_at_exit = reinterpret_cast<AtExit>(dlsym(RTLD_DEFAULT, "Py_AtExit"))) {
      py_at_exit(&Adapter::shutdown_at_exit);
    }
    // Without Python the runtime is left to the exit (destroying it here
    // would touch liboar's statics built after this point, already gone).
    std::atexit([] { g_exiting.store(true); });
  } catch (const std::exception& e) {
    g_adapter_failed = true;
    log_error("cannot start OAR (Paddle's CPU keeps working)", e.what());
  }
  return g_adapter;
}

bool Adapter::finalized() {
  std::lock_guard<std::mutex> lock(g_adapter_mutex);
  return g_finalized;
}

void Adapter::shutdown_at_exit() {
  g_exiting.store(true);
  finalize();
}

void Adapter::finalize() {
  std::lock_guard<std::mutex> lock(g_adapter_mutex);
  delete g_adapter;
  g_adapter = nullptr;
  g_finalized = true;
}

void Adapter::add_stream(StreamHandle* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.at(size_t(stream->device)).push_back(stream);
}

void Adapter::remove_stream(StreamHandle* stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto& list = streams_.at(size_t(stream->device));
  for (auto it = list.begin(); it != list.end(); ++it) {
    if (*it == stream) {
      list.erase(it);
      return;
    }
  }
}

std::vector<StreamHandle*> Adapter::streams(int device) {
  std::lock_guard<std::mutex> lock(mutex_);
  return streams_.at(size_t(device));
}

void Adapter::keep_staging(int device, Staging staging) {
  std::lock_guard<std::mutex> lock(mutex_);
  staging_.at(size_t(device)).push_back(std::move(staging));
}

void Adapter::reap_staging(int device, bool wait) {
  std::vector<Staging> done;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& list = staging_.at(size_t(device));
    size_t kept = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      bool finished = false;
      try {
        finished = wait || list[i].done.query();
      } catch (const oar::Error&) {
        finished = true;  // a failed stream runs no more work: the copy is over
      }
      if (finished) {
        done.push_back(std::move(list[i]));
      } else {
        if (kept != i) list[kept] = std::move(list[i]);
        ++kept;
      }
    }
    list.resize(kept);
  }
  for (Staging& staging : done) {
    try {
      if (wait) staging.done.synchronize();
    } catch (const oar::Error&) {
    }
  }
}

void* Adapter::add_host(std::unique_ptr<oar::Buffer> buffer, void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  host_[reinterpret_cast<uintptr_t>(address)] = std::move(buffer);
  return address;
}

bool Adapter::free_host(void* address) {
  std::unique_ptr<oar::Buffer> buffer;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = host_.find(reinterpret_cast<uintptr_t>(address));
    if (it == host_.end()) return false;
    buffer = std::move(it->second);
    host_.erase(it);
  }
  // No queued work reads it: uploads copy their source into staging memory
  // at the call, and downloads return when the bytes are there.
  if (!buffer) std::free(address);
  return true;
}

int Adapter::host_kind(const void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = host_.find(reinterpret_cast<uintptr_t>(address));
  if (it == host_.end()) return 0;
  return it->second ? 2 : 1;
}

void* Adapter::add_unified(std::unique_ptr<oar::Buffer> buffer, uint64_t size, int device) {
  void* address = buffer->host_address();
  auto range = std::make_unique<AddressSpace::Range>();
  range->buffer = std::move(buffer);
  range->base = reinterpret_cast<uintptr_t>(address);
  range->size = size;
  range->device = device;
  std::lock_guard<std::mutex> lock(mutex_);
  unified_[range->base] = std::move(range);
  return address;
}

std::unique_ptr<oar::Buffer> Adapter::remove_unified(void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = unified_.find(reinterpret_cast<uintptr_t>(address));
  if (it == unified_.end()) return nullptr;
  std::unique_ptr<oar::Buffer> buffer = std::move(it->second->buffer);
  unified_.erase(it);
  return buffer;
}

const AddressSpace::Range* Adapter::find_unified(const void* address) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (unified_.empty()) return nullptr;
  auto it = unified_.upper_bound(reinterpret_cast<uintptr_t>(address));
  if (it == unified_.begin()) return nullptr;
  --it;
  const AddressSpace::Range* range = it->second.get();
  uint64_t offset = reinterpret_cast<uintptr_t>(address) - range->base;
  return offset < (range->size == 0 ? 1 : range->size) ? range : nullptr;
}

DeviceAddress resolve(const void* pointer, uint64_t bytes) {
  Adapter* adapter = Adapter::get();
  const AddressSpace::Range* range =
      adapter != nullptr ? adapter->addresses().find(pointer) : nullptr;
  // Unified memory is the only device memory outside the reserved range.
  if (range == nullptr && adapter != nullptr) range = adapter->find_unified(pointer);
  if (range == nullptr) {
    throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                     "paddle-custom-oar: " + std::to_string(reinterpret_cast<uintptr_t>(pointer)) +
                         " is not OAR device memory");
  }
  uint64_t offset = uint64_t(reinterpret_cast<uintptr_t>(pointer) - range->base);
  if (offset > range->size || bytes > range->size - offset) {
    throw oar::Error(OAR_STATUS_OUT_OF_RANGE,
                     "paddle-custom-oar: bytes [" + std::to_string(offset) + ", " +
                         std::to_string(offset + bytes) + ") leave an allocation of " +
                         std::to_string(range->size) + " bytes");
  }
  return DeviceAddress{range->buffer->memory(), range->buffer->offset() + offset, range};
}

// ---------------------------------------------------------------- slots

namespace {

Adapter& adapter() {
  Adapter* adapter = Adapter::get();
  if (adapter == nullptr) throw oar::Error(OAR_STATUS_UNAVAILABLE, "OAR did not start");
  return *adapter;
}

oar::Device& device_of(const C_Device device) { return adapter().device(device->id); }

oar::Stream& stream_of(const C_Device device, C_Stream stream) {
  if (stream == nullptr) return device_of(device).default_stream();
  return reinterpret_cast<StreamHandle*>(stream)->stream;
}

// A range of device memory as (buffer, offset in it) for the C++ API.
struct Place {
  const oar::Buffer* buffer;
  uint64_t offset;
};
Place place(const void* pointer, uint64_t size) {
  DeviceAddress address = resolve(pointer, size);
  uint64_t offset = uint64_t(reinterpret_cast<uintptr_t>(pointer) - address.range->base);
  return Place{address.range->buffer.get(), offset};
}

// A synchronous copy behaves like CUDA's cudaMemcpy: it follows all work
// already submitted on the device's streams and returns when it is done. The
// default stream waits for an event on each of Paddle's streams, so no
// stream is drained on the host.
oar::Stream& ordered_default_stream(int id) {
  Adapter& a = adapter();
  oar::Device& device = a.device(id);
  oar::Stream& stream = device.default_stream();
  for (StreamHandle* other : a.streams(id)) {
    oar::Event event = device.create_event();
    event.record(other->stream);
    stream.wait(event);
  }
  return stream;
}

C_Status init_device(const C_Device device) {
  return guarded("init_device", [&] {
    device_of(device).handle();
    return C_SUCCESS;
  });
}

C_Status set_device(const C_Device device) {
  return guarded("set_device", [&] {
    if (device->id < 0 || size_t(device->id) >= adapter().device_count()) return C_ERROR;
    t_current_device = device->id;
    return C_SUCCESS;
  });
}

C_Status get_device(const C_Device device) {
  device->id = t_current_device;
  return C_SUCCESS;
}

C_Status deinit_device(const C_Device device) {
  return guarded("deinit_device", [&] {
    adapter().reap_staging(device->id, true);
    return C_SUCCESS;
  });
}

C_Status finalize() {
  if (!g_exiting.load()) Adapter::finalize();
  return C_SUCCESS;
}

C_Status get_device_count(size_t* count) {
  Adapter* a = Adapter::get();
  *count = a != nullptr ? a->device_count() : 0;
  return C_SUCCESS;
}

C_Status get_device_list(size_t* devices) {
  Adapter* a = Adapter::get();
  size_t n = a != nullptr ? a->device_count() : 0;
  for (size_t i = 0; i < n; ++i) devices[i] = i;
  return C_SUCCESS;
}

C_Status create_stream(const C_Device device, C_Stream* stream) {
  return guarded("create_stream", [&] {
    auto handle = std::make_unique<StreamHandle>();
    handle->stream = device_of(device).create_stream();
    handle->device = device->id;
    adapter().add_stream(handle.get());
    *stream = reinterpret_cast<C_Stream>(handle.release());
    return C_SUCCESS;
  });
}

C_Status destroy_stream(const C_Device, C_Stream stream) {
  return guarded("destroy_stream", [&] {
    auto* handle = reinterpret_cast<StreamHandle*>(stream);
    if (Adapter* a = Adapter::get()) a->remove_stream(handle);
    delete handle;  // oar::Stream waits for its work before it dies
    return C_SUCCESS;
  });
}

C_Status query_stream(const C_Device device, C_Stream stream) {
  return guarded("query_stream",
                 [&] { return stream_of(device, stream).query() ? C_SUCCESS : C_FAILED; });
}

struct CallbackData {
  C_Device_st device;
  C_Stream stream;
  C_Callback callback;
  void* user_data;
};

C_Status stream_add_callback(const C_Device device, C_Stream stream, C_Callback callback,
                             void* user_data) {
  return guarded("stream_add_callback", [&] {
    oar::Device& dev = device_of(device);
    CallbackData data{*device, stream, callback, user_data};
    if (!dev.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS)) {
      // Without host callbacks the stream is drained and the callback runs here.
      stream_of(device, stream).synchronize();
      C_Status status = C_SUCCESS;
      callback(&data.device, stream, user_data, &status);
      return C_SUCCESS;
    }
    stream_of(device, stream).add_callback([data](oar_status_t code) mutable {
      C_Status status = code == OAR_STATUS_OK ? C_SUCCESS : C_ERROR;
      data.callback(&data.device, data.stream, data.user_data, &status);
    });
    return C_SUCCESS;
  });
}

C_Status create_event(const C_Device device, C_Event* event) {
  return guarded("create_event", [&] {
    auto handle = std::make_unique<EventHandle>();
    handle->event = device_of(device).create_event();
    handle->device = device->id;
    *event = reinterpret_cast<C_Event>(handle.release());
    return C_SUCCESS;
  });
}

C_Status record_event(const C_Device device, C_Stream stream, C_Event event) {
  return guarded("record_event", [&] {
    reinterpret_cast<EventHandle*>(event)->event.record(stream_of(device, stream));
    return C_SUCCESS;
  });
}

C_Status destroy_event(const C_Device, C_Event event) {
  return guarded("destroy_event", [&] {
    delete reinterpret_cast<EventHandle*>(event);
    return C_SUCCESS;
  });
}

C_Status query_event(const C_Device, C_Event event) {
  return guarded("query_event", [&] {
    return reinterpret_cast<EventHandle*>(event)->event.query() ? C_SUCCESS : C_FAILED;
  });
}

C_Status synchronize_device(const C_Device device) {
  return guarded("synchronize_device", [&] {
    device_of(device).synchronize();
    adapter().reap_staging(device->id, false);
#if defined(OAR_PADDLE_XCCL)
    adapter().check_comms(device->id);
#endif
    return C_SUCCESS;
  });
}

C_Status synchronize_stream(const C_Device device, C_Stream stream) {
  return guarded("synchronize_stream", [&] {
    stream_of(device, stream).synchronize();
    adapter().reap_staging(device->id, false);
#if defined(OAR_PADDLE_XCCL)
    adapter().check_comms(device->id);
#endif
    return C_SUCCESS;
  });
}

C_Status synchronize_event(const C_Device, C_Event event) {
  return guarded("synchronize_event", [&] {
    reinterpret_cast<EventHandle*>(event)->event.synchronize();
    return C_SUCCESS;
  });
}

C_Status stream_wait_event(const C_Device device, C_Stream stream, C_Event event) {
  return guarded("stream_wait_event", [&] {
    stream_of(device, stream).wait(reinterpret_cast<EventHandle*>(event)->event);
    return C_SUCCESS;
  });
}

// Memory. Each Paddle allocation is one OAR buffer from the device's caching
// allocator (so a free does not drain the device) given an address range.
C_Status device_memory_allocate(const C_Device device, void** ptr, size_t size) {
  return guarded("device_memory_allocate", [&] {
    Adapter& a = adapter();
    *ptr = nullptr;
    std::unique_ptr<oar::Buffer> buffer;
    try {
      buffer = std::make_unique<oar::Buffer>(a.device(device->id).allocate(size));
    } catch (const oar::Error& e) {
      if (e.code() != OAR_STATUS_RESOURCE_EXHAUSTED) throw;
      // Success with no memory is how Paddle's allocator learns it is out of
      // memory (a failed status is a generic error to it); it then raises its
      // own ResourceExhaustedError. OAR's message says what was held.
      log_error("device_memory_allocate", e.what());
      return C_SUCCESS;
    }
    void* address = a.addresses().insert(std::move(buffer), size, device->id);
    if (address == nullptr) {
      log_error("device_memory_allocate", "the adapter's 1 TiB address range is full");
      return C_SUCCESS;
    }
    *ptr = address;
    return C_SUCCESS;
  });
}

C_Status device_memory_deallocate(const C_Device device, void* ptr, size_t) {
  return guarded("device_memory_deallocate", [&] {
    if (Adapter::finalized()) return C_SUCCESS;  // the memory went with the runtime
    Adapter& a = adapter();
    std::unique_ptr<oar::Buffer> buffer = a.addresses().erase(ptr);
    if (!buffer) throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "free of an unknown address");
    // The memory returns to OAR's allocator, which reuses it on another stream
    // only after the work already submitted on that stream is done.
    for (StreamHandle* stream : a.streams(device->id)) buffer->record_stream(stream->stream);
    return C_SUCCESS;
  });
}

// Host memory for Paddle's host-side staging: OAR's page-locked memory
// where the device offers OAR_MEMORY_KIND_HOST_PINNED (cpu here; cuda),
// else plain host memory, page aligned (sim, opencl, vulkan here).
C_Status host_memory_allocate(const C_Device device, void** ptr, size_t size) {
  return guarded("host_memory_allocate", [&] {
    *ptr = nullptr;
    Adapter& a = adapter();
    oar::Device& dev = a.device(device->id);
    if (dev.has_memory_kind(OAR_MEMORY_KIND_HOST_PINNED)) {
      auto buffer = std::make_unique<oar::Buffer>(
          dev.allocate_uncached(size == 0 ? 1 : size, OAR_MEMORY_KIND_HOST_PINNED));
      void* address = buffer->host_address();
      *ptr = a.add_host(std::move(buffer), address);
      return C_SUCCESS;
    }
    void* address = nullptr;
    if (posix_memalign(&address, 4096, size == 0 ? 1 : size) != 0) {
      throw oar::Error(OAR_STATUS_RESOURCE_EXHAUSTED,
                       "no " + std::to_string(size) + " bytes of host memory");
    }
    *ptr = a.add_host(nullptr, address);
    return C_SUCCESS;
  });
}

C_Status host_memory_deallocate(const C_Device, void* ptr, size_t) {
  return guarded("host_memory_deallocate", [&] {
    if (Adapter::finalized()) return C_SUCCESS;  // pinned memory went with the runtime
    if (ptr == nullptr) return C_SUCCESS;
    if (!adapter().free_host(ptr)) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "free of unknown host memory");
    }
    return C_SUCCESS;
  });
}

// Unified memory: one address for the host and the device's kernels, only
// where the device offers OAR_MEMORY_KIND_UNIFIED (cpu here); elsewhere an
// error naming the device.
C_Status unified_memory_allocate(const C_Device device, void** ptr, size_t size) {
  return guarded("unified_memory_allocate", [&] {
    *ptr = nullptr;
    Adapter& a = adapter();
    oar::Device& dev = a.device(device->id);
    if (!dev.has_memory_kind(OAR_MEMORY_KIND_UNIFIED)) {
      throw oar::Error(OAR_STATUS_UNIMPLEMENTED, "OAR device " + dev.name() +
                                                     " offers no unified memory (its memory_kinds "
                                                     "lack OAR_MEMORY_KIND_UNIFIED)");
    }
    auto buffer = std::make_unique<oar::Buffer>(
        dev.allocate_uncached(size == 0 ? 1 : size, OAR_MEMORY_KIND_UNIFIED));
    *ptr = a.add_unified(std::move(buffer), size, device->id);
    return C_SUCCESS;
  });
}

C_Status unified_memory_deallocate(const C_Device device, void* ptr, size_t) {
  return guarded("unified_memory_deallocate", [&] {
    if (Adapter::finalized()) return C_SUCCESS;  // the memory went with the runtime
    if (ptr == nullptr) return C_SUCCESS;
    Adapter& a = adapter();
    std::unique_ptr<oar::Buffer> buffer = a.remove_unified(ptr);
    if (!buffer) throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "free of unknown unified memory");
    // OAR frees uncached memory at once, so no queued kernel may still use
    // it: the device is drained first (unified memory is rare in Paddle).
    a.device(device->id).synchronize();
    return C_SUCCESS;
  });
}

C_Status device_memory_set(const C_Device device, void* ptr, unsigned char value, size_t size) {
  return guarded("device_memory_set", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place p = place(ptr, size);
    oar::Stream& stream = ordered_default_stream(device->id);
    stream.fill(*p.buffer, p.offset, value, size);
    stream.synchronize();
    return C_SUCCESS;
  });
}

C_Status memory_copy_h2d(const C_Device device, void* dst, const void* src, size_t size) {
  return guarded("memory_copy_h2d", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place p = place(dst, size);
    oar::Stream& stream = ordered_default_stream(device->id);
    stream.copy_from_host(*p.buffer, p.offset, src, size);
    stream.synchronize();
    return C_SUCCESS;
  });
}

C_Status memory_copy_d2h(const C_Device device, void* dst, const void* src, size_t size) {
  return guarded("memory_copy_d2h", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place p = place(src, size);
    oar::Stream& stream = ordered_default_stream(device->id);
    stream.copy_to_host(dst, *p.buffer, p.offset, size);
    stream.synchronize();
    return C_SUCCESS;
  });
}

C_Status memory_copy_d2d(const C_Device device, void* dst, const void* src, size_t size) {
  return guarded("memory_copy_d2d", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place d = place(dst, size);
    Place s = place(src, size);
    oar::Stream& stream = ordered_default_stream(device->id);
    stream.copy(*d.buffer, d.offset, *s.buffer, s.offset, size);
    stream.synchronize();
    return C_SUCCESS;
  });
}

C_Status memory_copy_p2p(const C_Device dst_device, const C_Device, void* dst, const void* src,
                         size_t size) {
  return guarded("memory_copy_p2p", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place d = place(dst, size);
    Place s = place(src, size);
    oar::Stream& stream = ordered_default_stream(dst_device->id);
    stream.copy(*d.buffer, d.offset, *s.buffer, s.offset, size);
    stream.synchronize();
    return C_SUCCESS;
  });
}

// An asynchronous upload copies the host bytes into a staging buffer first,
// so the caller may reuse its memory at once (Paddle frees temporaries right
// after the call); the staging buffer is freed once an event after the copy
// completes, found at a later synchronize or upload.
C_Status async_memory_copy_h2d(const C_Device device, C_Stream stream, void* dst, const void* src,
                               size_t size) {
  return guarded("async_memory_copy_h2d", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Adapter& a = adapter();
    a.reap_staging(device->id, false);
    Place p = place(dst, size);
    oar::Stream& s = stream_of(device, stream);
    Staging staging;
    staging.bytes.reset(new unsigned char[size == 0 ? 1 : size]);
    std::memcpy(staging.bytes.get(), src, size);
    s.copy_from_host(*p.buffer, p.offset, staging.bytes.get(), size);
    staging.done = a.device(device->id).create_event();
    staging.done.record(s);
    a.keep_staging(device->id, std::move(staging));
    return C_SUCCESS;
  });
}

// A download into host memory the adapter did not allocate returns when the
// bytes are there, as CUDA's does for pageable memory: Paddle reads the
// result of such copies without a synchronize of its own.
C_Status async_memory_copy_d2h(const C_Device device, C_Stream stream, void* dst, const void* src,
                               size_t size) {
  return guarded("async_memory_copy_d2h", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place p = place(src, size);
    oar::Stream& s = stream_of(device, stream);
    s.copy_to_host(dst, *p.buffer, p.offset, size);
    s.synchronize();
    return C_SUCCESS;
  });
}

C_Status async_memory_copy_d2d(const C_Device device, C_Stream stream, void* dst, const void* src,
                               size_t size) {
  return guarded("async_memory_copy_d2d", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place d = place(dst, size);
    Place s = place(src, size);
    stream_of(device, stream).copy(*d.buffer, d.offset, *s.buffer, s.offset, size);
    return C_SUCCESS;
  });
}

C_Status async_memory_copy_p2p(const C_Device dst_device, const C_Device, C_Stream stream,
                               void* dst, const void* src, size_t size) {
  return guarded("async_memory_copy_p2p", [&] {
    if (size == 0) return C_SUCCESS;  // Paddle copies empty tensors from NULL
    Place d = place(dst, size);
    Place s = place(src, size);
    stream_of(dst_device, stream).copy(*d.buffer, d.offset, *s.buffer, s.offset, size);
    return C_SUCCESS;
  });
}

C_Status device_memory_stats(const C_Device device, size_t* total_memory, size_t* free_memory) {
  return guarded("device_memory_stats", [&] {
    oar::MemoryInfo info = device_of(device).memory_info();
    *total_memory = size_t(info.total);
    *free_memory = size_t(info.free);
    return C_SUCCESS;
  });
}

// Paddle's auto-growth allocator aligns every block to this.
C_Status device_min_chunk_size(const C_Device device, size_t* size) {
  return guarded("device_min_chunk_size", [&] {
    uint64_t alignment = device_of(device).properties().min_alignment;
    *size = size_t(alignment > 256 ? alignment : 256);
    return C_SUCCESS;
  });
}

C_Status device_max_alloc_size(const C_Device device, size_t* size) {
  return guarded("device_max_alloc_size", [&] {
    *size = size_t(device_of(device).properties().max_allocation_size);
    return C_SUCCESS;
  });
}

C_Status is_float16_supported(const C_Device device, bool* supported) {
  return guarded("is_float16_supported", [&] {
    *supported = (device_of(device).properties().dtypes & OAR_DTYPE_SUPPORT_F16) != 0;
    return C_SUCCESS;
  });
}

C_Status is_bfloat16_supported(const C_Device device, bool* supported) {
  return guarded("is_bfloat16_supported", [&] {
    *supported = (device_of(device).properties().dtypes & OAR_DTYPE_SUPPORT_BF16) != 0;
    return C_SUCCESS;
  });
}

}  // namespace
}  // namespace oar_paddle

extern "C" __attribute__((visibility("default"))) void InitPlugin(CustomRuntimeParams* params) {
  using namespace oar_paddle;
  PADDLE_CUSTOM_RUNTIME_CHECK_VERSION(params);
  params->device_type = const_cast<char*>(kDeviceType);
  params->sub_device_type = const_cast<char*>("v1");

  C_DeviceInterface* api = params->interface;
  std::memset(reinterpret_cast<char*>(api) + sizeof(api->size), 0,
              sizeof(C_DeviceInterface) - sizeof(api->size));
  api->finalize = finalize;
  api->init_device = init_device;
  api->set_device = set_device;
  api->get_device = get_device;
  api->deinit_device = deinit_device;
  api->create_stream = create_stream;
  api->destroy_stream = destroy_stream;
  api->query_stream = query_stream;
  api->stream_add_callback = stream_add_callback;
  api->create_event = create_event;
  api->record_event = record_event;
  api->destroy_event = destroy_event;
  api->query_event = query_event;
  api->synchronize_device = synchronize_device;
  api->synchronize_stream = synchronize_stream;
  api->synchronize_event = synchronize_event;
  api->stream_wait_event = stream_wait_event;
  api->device_memory_allocate = device_memory_allocate;
  api->device_memory_deallocate = device_memory_deallocate;
  api->device_memory_set = device_memory_set;
  api->host_memory_allocate = host_memory_allocate;
  api->host_memory_deallocate = host_memory_deallocate;
  api->unified_memory_allocate = unified_memory_allocate;
  api->unified_memory_deallocate = unified_memory_deallocate;
  api->memory_copy_h2d = memory_copy_h2d;
  api->memory_copy_d2h = memory_copy_d2h;
  api->memory_copy_d2d = memory_copy_d2d;
  api->memory_copy_p2p = memory_copy_p2p;
  api->async_memory_copy_h2d = async_memory_copy_h2d;
  api->async_memory_copy_d2h = async_memory_copy_d2h;
  api->async_memory_copy_d2d = async_memory_copy_d2d;
  api->async_memory_copy_p2p = async_memory_copy_p2p;
  api->get_device_count = get_device_count;
  api->get_device_list = get_device_list;
  api->device_memory_stats = device_memory_stats;
  api->device_min_chunk_size = device_min_chunk_size;
  api->device_max_alloc_size = device_max_alloc_size;
  api->is_float16_supported = is_float16_supported;
  api->is_bfloat16_supported = is_bfloat16_supported;
  register_xccl(api);
}

// For the adapter's tests (ctypes): slots Paddle's Python API does not reach,
// in this order: host_memory_allocate, host_memory_deallocate,
// unified_memory_allocate, unified_memory_deallocate, device_memory_set.
extern "C" __attribute__((visibility("default"))) const void* const* oar_paddle_memory_slots() {
  using namespace oar_paddle;
  static const void* const slots[] = {reinterpret_cast<const void*>(&host_memory_allocate),
                                      reinterpret_cast<const void*>(&host_memory_deallocate),
                                      reinterpret_cast<const void*>(&unified_memory_allocate),
                                      reinterpret_cast<const void*>(&unified_memory_deallocate),
                                      reinterpret_cast<const void*>(&device_memory_set)};
  return slots;
}

// For the adapter's tests: where host memory from host_memory_allocate came
// from (2: OAR pinned memory, 1: plain host memory, 0: not the adapter's).
extern "C" __attribute__((visibility("default"))) int oar_paddle_host_memory_kind(
    const void* address) {
  oar_paddle::Adapter* adapter = oar_paddle::Adapter::get();
  return adapter != nullptr ? adapter->host_kind(address) : 0;
}

// For the adapter's tests and tools (through ctypes): what OAR says about
// Paddle's oar:|device|. Returns -1 for a device that does not exist.
extern "C" __attribute__((visibility("default"))) int64_t oar_paddle_device_dtypes(int device) {
  oar_paddle::Adapter* adapter = oar_paddle::Adapter::get();
  if (adapter == nullptr || device < 0 || size_t(device) >= adapter->device_count()) return -1;
  return int64_t(adapter->device(device).properties().dtypes);
}

// The oar_memory_kind_e bits oar:|device| offers (-1 for a device that does
// not exist): which host and unified memory the slots can serve.
extern "C" __attribute__((visibility("default"))) int64_t oar_paddle_device_memory_kinds(
    int device) {
  oar_paddle::Adapter* adapter = oar_paddle::Adapter::get();
  if (adapter == nullptr || device < 0 || size_t(device) >= adapter->device_count()) return -1;
  return int64_t(adapter->device(device).properties().memory_kinds);
}

// Writes the OAR name ("sim:0") of oar:|device| into |out| (|size| bytes, NUL
// terminated); returns false for a device that does not exist.
extern "C" __attribute__((visibility("default"))) bool oar_paddle_device_name(int device, char* out,
                                                                              size_t size) {
  oar_paddle::Adapter* adapter = oar_paddle::Adapter::get();
  if (adapter == nullptr || device < 0 || size_t(device) >= adapter->device_count() || size == 0) {
    return false;
  }
  std::snprintf(out, size, "%s", adapter->device(device).name().c_str());
  return true;
}
