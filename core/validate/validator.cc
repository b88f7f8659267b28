#include "core/validate/validator.h"

#include <cstdio>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/loader/host_services.h"
#include "oar/validate.hpp"

namespace oar {
namespace detail::validate {
namespace {

// Plugins validated at once; each slot has its own instantiation of the
// wrappers, since a C function pointer carries no context.
constexpr int kSlots = 8;

enum class Kind { kDevice, kStream, kEvent, kMemory };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kDevice:
      return "device";
    case Kind::kStream:
      return "stream";
    case Kind::kEvent:
      return "event";
    case Kind::kMemory:
      return "memory";
  }
  return "object";
}

// One handle the plugin returned, live or freed.
struct Object {
  Kind kind = Kind::kDevice;
  bool live = true;
  const void* device = nullptr;  // the device it belongs to (itself for a device)
  std::string device_name;       // "cpu:0 [device 0x...]"
  uint64_t size = 0;             // memory
  uint32_t memory_kind = 0;      // memory
  bool recorded = false;         // events
  const char* created_by = "";
  const char* released_by = "";
};

struct State {
  bool used = false;
  oar_plugin_api_t api{};  // the plugin's own slots
  oar_host_services_t host{};
  std::string name;
  std::unordered_map<const void*, Object> objects;
};

// One mutex for every slot: a lookup may search the other plugins' handles.
std::mutex g_mutex;
State g_states[kSlots];

std::mutex g_reports_mutex;
std::vector<std::string> g_reports;

std::string hex(const void* pointer) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", pointer);
  return text;
}

std::string describe(const void* handle, const Object& object) {
  std::string text = std::string(kind_name(object.kind)) + " " + hex(handle);
  switch (object.kind) {
    case Kind::kDevice:
      return text + " (" + object.device_name + ")";
    case Kind::kStream:
      return text + " of " + object.device_name;
    case Kind::kEvent:
      return text + " of " + object.device_name +
             (object.recorded ? ", recorded" : ", never recorded");
    case Kind::kMemory:
      return text + " (" + std::to_string(object.size) + " bytes of kind " +
             std::to_string(object.memory_kind) + ", allocated on " + object.device_name + ")";
  }
  return text;
}

// Finds |handle| as a live |kind| of |state|. On a misuse returns nullptr and
// sets |problem|. Memory the plugin never returned (a DLPack import, whose
// handle is the producer's pointer) is accepted when |allow_external|: then
// nullptr with |problem| empty, and no range or device check applies.
const Object* lookup(const State& state, const void* handle, Kind kind, std::string* problem,
                     bool allow_external = false) {
  problem->clear();
  auto it = state.objects.find(handle);
  if (it != state.objects.end() && it->second.kind == kind) {
    if (it->second.live) return &it->second;
    *problem = describe(handle, it->second) + " was freed (by " + it->second.released_by + ")";
    return nullptr;
  }
  std::string why;
  if (it != state.objects.end()) {
    why = "it is " + std::string(it->second.live ? "the " : "the freed ") +
          describe(handle, it->second);
  } else {
    for (const State& other : g_states) {
      if (&other == &state || !other.used) continue;
      auto found = other.objects.find(handle);
      if (found != other.objects.end()) {
        why = "it is " + describe(handle, found->second) + " of plugin '" + other.name + "'";
        break;
      }
    }
    if (why.empty()) {
      if (allow_external) return nullptr;
      why = "the plugin never returned it";
    }
  }
  *problem = std::string(kind_name(kind)) + " " + hex(handle) + " is not a live " +
             kind_name(kind) + " of plugin '" + state.name + "' (" + why + ")";
  return nullptr;
}

// A range of |size| bytes at |offset| in |memory| (null: external, unchecked).
bool out_of_range(const void* handle, const Object* memory, uint64_t offset, uint64_t size,
                  std::string* problem) {
  if (memory == nullptr) return false;
  if (offset <= memory->size && size <= memory->size - offset) return false;
  std::string end = offset + size < offset ? "2^64 + " + std::to_string(offset + size)
                                           : std::to_string(offset + size);
  *problem = "range [" + std::to_string(offset) + ", " + end + ") leaves the " +
             std::to_string(memory->size) + "-byte allocation " + hex(handle) + " (allocated on " +
             memory->device_name + ")";
  return true;
}

// |object| (null: external memory, unchecked) is not on |stream|'s device.
bool other_device(const void* handle, const Object* object, const void* stream_handle,
                  const Object& stream, std::string* problem) {
  if (object == nullptr || object->device == stream.device) return false;
  *problem =
      describe(handle, *object) + " is not on the device of " + describe(stream_handle, stream);
  return true;
}

oar_status_t fail(const State& state, oar_status_t code, const std::string& call,
                  const std::string& problem) {
  std::string message = "validation: " + call + ": " + problem;
  add_report(message);
  state.host.report_error(state.host.context, code, message.c_str());
  return code;
}

std::string u64(uint64_t value) { return std::to_string(value); }

// Records a handle the plugin just returned (a reused address replaces the
// freed object it once was).
void remember(State& state, const void* handle, Object object) {
  std::lock_guard<std::mutex> lock(g_mutex);
  state.objects[handle] = std::move(object);
}

void forget(State& state, const void* handle, const char* released_by) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = state.objects.find(handle);
  if (it == state.objects.end()) return;
  it->second.live = false;
  it->second.released_by = released_by;
}

// The wrappers of validator slot I. Each checks under g_mutex, then calls the
// plugin without holding it.
template <int I>
struct Wrappers {
  static State& state() { return g_states[I]; }

  // Looks |handle| up as a live |kind| or fails the call |call()| describes.
#define OAR_VALIDATE_LOOKUP(var, handle, kind, call, ...)                     \
  const Object* var = lookup(state(), handle, kind, &problem, ##__VA_ARGS__); \
  if (!problem.empty()) return fail(state(), OAR_STATUS_INVALID_ARGUMENT, call(), problem);

  static oar_status_t device_open(int32_t index, oar_device_t* out_device) {
    oar_status_t code = state().api.device_open(index, out_device);
    if (code == OAR_STATUS_OK && out_device != nullptr && *out_device != nullptr) {
      Object object;
      object.kind = Kind::kDevice;
      object.device = *out_device;
      object.device_name =
          state().name + ":" + std::to_string(index) + " [device " + hex(*out_device) + "]";
      object.created_by = "device_open";
      remember(state(), *out_device, std::move(object));
    }
    return code;
  }

  static oar_status_t device_close(oar_device_t device) {
    if (device == nullptr) return state().api.device_close(device);
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] { return "device_close(device " + hex(device) + ")"; };
      OAR_VALIDATE_LOOKUP(found, device, Kind::kDevice, call);
      (void)found;
      // Leaks: whatever of this device is still live. The core releases the
      // framework's leftovers before it closes a device, so these are the
      // core's (or a direct ABI user's) own.
      for (auto& [handle, object] : state().objects) {
        if (!object.live || object.kind == Kind::kDevice || object.device != device) continue;
        std::string message = "validation: " + call() + ": leaked " + describe(handle, object) +
                              ", created by " + object.created_by;
        add_report(message);
        log_line(OAR_LOG_LEVEL_WARNING, state().name, message);
        object.live = false;
        object.released_by = "device_close, as a leak";
      }
    }
    oar_status_t code = state().api.device_close(device);
    if (code == OAR_STATUS_OK) forget(state(), device, "device_close");
    return code;
  }

  static oar_status_t device_synchronize(oar_device_t device) {
    if (device != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] { return "device_synchronize(device " + hex(device) + ")"; };
      OAR_VALIDATE_LOOKUP(found, device, Kind::kDevice, call);
      (void)found;
    }
    return state().api.device_synchronize(device);
  }

  static oar_status_t device_memory_info(oar_device_t device, uint64_t* out_free,
                                         uint64_t* out_total) {
    if (device != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] { return "device_memory_info(device " + hex(device) + ")"; };
      OAR_VALIDATE_LOOKUP(found, device, Kind::kDevice, call);
      (void)found;
    }
    return state().api.device_memory_info(device, out_free, out_total);
  }

  // A call whose only handle is |handle| of |kind|.
  template <typename Handle>
  static oar_status_t check_one(const char* name, Handle handle, Kind kind) {
    if (handle == nullptr) return OAR_STATUS_OK;  // the plugin's own argument check
    std::lock_guard<std::mutex> lock(g_mutex);
    std::string problem;
    auto call = [&] { return std::string(name) + "(" + kind_name(kind) + " " + hex(handle) + ")"; };
    OAR_VALIDATE_LOOKUP(found, handle, kind, call);
    (void)found;
    return OAR_STATUS_OK;
  }

  // Creates an object of |kind| on |device| through |create|.
  template <typename Create>
  static oar_status_t create_on(const char* name, oar_device_t device, Kind kind, uint64_t size,
                                uint32_t memory_kind, Create&& create) {
    std::string device_name;
    if (device != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] { return std::string(name) + "(device " + hex(device) + ")"; };
      OAR_VALIDATE_LOOKUP(found, device, Kind::kDevice, call);
      device_name = found->device_name;
    }
    void* handle = nullptr;
    oar_status_t code = create(&handle);
    if (code == OAR_STATUS_OK && handle != nullptr) {
      Object object;
      object.kind = kind;
      object.device = device;
      object.device_name = device_name;
      object.size = size;
      object.memory_kind = memory_kind;
      object.created_by = name;
      remember(state(), handle, std::move(object));
    }
    return code;
  }

  static oar_status_t stream_create(oar_device_t device, const oar_stream_desc_t* desc,
                                    oar_stream_t* out_stream) {
    return create_on("stream_create", device, Kind::kStream, 0, 0, [&](void** handle) {
      oar_status_t code = state().api.stream_create(device, desc, out_stream);
      if (code == OAR_STATUS_OK && out_stream != nullptr) *handle = *out_stream;
      return code;
    });
  }

  static oar_status_t stream_destroy(oar_stream_t stream) {
    if (oar_status_t code = check_one("stream_destroy", stream, Kind::kStream)) return code;
    oar_status_t code = state().api.stream_destroy(stream);
    if (code == OAR_STATUS_OK) forget(state(), stream, "stream_destroy");
    return code;
  }

  static oar_status_t stream_synchronize(oar_stream_t stream) {
    if (oar_status_t code = check_one("stream_synchronize", stream, Kind::kStream)) return code;
    return state().api.stream_synchronize(stream);
  }

  static oar_status_t stream_query(oar_stream_t stream, bool* out_idle) {
    if (oar_status_t code = check_one("stream_query", stream, Kind::kStream)) return code;
    return state().api.stream_query(stream, out_idle);
  }

  static oar_status_t stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                               void* user_data) {
    if (oar_status_t code = check_one("stream_add_host_callback", stream, Kind::kStream))
      return code;
    return state().api.stream_add_host_callback(stream, callback, user_data);
  }

  static oar_status_t stream_wait_event(oar_stream_t stream, oar_event_t event) {
    if (stream != nullptr && event != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] {
        return "stream_wait_event(stream " + hex(stream) + ", event " + hex(event) + ")";
      };
      OAR_VALIDATE_LOOKUP(s, stream, Kind::kStream, call);
      OAR_VALIDATE_LOOKUP(e, event, Kind::kEvent, call);
      if (other_device(event, e, stream, *s, &problem))
        return fail(state(), OAR_STATUS_INVALID_ARGUMENT, call(), problem);
      if (!e->recorded) {
        return fail(state(), OAR_STATUS_FAILED_PRECONDITION, call(),
                    describe(event, *e) + " is waited on before it was ever recorded");
      }
    }
    return state().api.stream_wait_event(stream, event);
  }

  static oar_status_t event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event) {
    return create_on("event_create", device, Kind::kEvent, 0, 0, [&](void** handle) {
      oar_status_t code = state().api.event_create(device, flags, out_event);
      if (code == OAR_STATUS_OK && out_event != nullptr) *handle = *out_event;
      return code;
    });
  }

  static oar_status_t event_destroy(oar_event_t event) {
    if (oar_status_t code = check_one("event_destroy", event, Kind::kEvent)) return code;
    oar_status_t code = state().api.event_destroy(event);
    if (code == OAR_STATUS_OK) forget(state(), event, "event_destroy");
    return code;
  }

  static oar_status_t event_record(oar_event_t event, oar_stream_t stream) {
    if (stream != nullptr && event != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] {
        return "event_record(event " + hex(event) + ", stream " + hex(stream) + ")";
      };
      OAR_VALIDATE_LOOKUP(e, event, Kind::kEvent, call);
      OAR_VALIDATE_LOOKUP(s, stream, Kind::kStream, call);
      if (other_device(event, e, stream, *s, &problem))
        return fail(state(), OAR_STATUS_INVALID_ARGUMENT, call(), problem);
    }
    oar_status_t code = state().api.event_record(event, stream);
    if (code == OAR_STATUS_OK && event != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      auto it = state().objects.find(event);
      if (it != state().objects.end()) it->second.recorded = true;
    }
    return code;
  }

  static oar_status_t event_query(oar_event_t event, bool* out_done) {
    if (oar_status_t code = check_one("event_query", event, Kind::kEvent)) return code;
    return state().api.event_query(event, out_done);
  }

  static oar_status_t event_synchronize(oar_event_t event) {
    if (oar_status_t code = check_one("event_synchronize", event, Kind::kEvent)) return code;
    return state().api.event_synchronize(event);
  }

  static oar_status_t event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms) {
    if (start != nullptr && end != nullptr) {
      std::lock_guard<std::mutex> lock(g_mutex);
      std::string problem;
      auto call = [&] {
        return "event_elapsed_ms(start " + hex(start) + ", end " + hex(end) + ")";
      };
      OAR_VALIDATE_LOOKUP(a, start, Kind::kEvent, call);
      OAR_VALIDATE_LOOKUP(b, end, Kind::kEvent, call);
      for (auto [handle, event] : {std::pair{start, a}, std::pair{end, b}}) {
        if (!event->recorded) {
          return fail(state(), OAR_STATUS_FAILED_PRECONDITION, call(),
                      describe(handle, *event) + " is timed before it was ever recorded");
        }
      }
    }
    return state().api.event_elapsed_ms(start, end, out_ms);
  }

  static oar_status_t memory_allocate(oar_device_t device, uint64_t size, uint32_t kind,
                                      oar_memory_t* out_memory) {
    return create_on("memory_allocate", device, Kind::kMemory, size, kind, [&](void** handle) {
      oar_status_t code = state().api.memory_allocate(device, size, kind, out_memory);
      if (code == OAR_STATUS_OK && out_memory != nullptr) *handle = *out_memory;
      return code;
    });
  }

  // |memory| of |device| (both live, the memory on that device).
  static oar_status_t check_device_memory(const char* name, oar_device_t device,
                                          oar_memory_t memory) {
    if (device == nullptr || memory == nullptr) return OAR_STATUS_OK;
    std::lock_guard<std::mutex> lock(g_mutex);
    std::string problem;
    auto call = [&] {
      return std::string(name) + "(device " + hex(device) + ", memory " + hex(memory) + ")";
    };
    OAR_VALIDATE_LOOKUP(d, device, Kind::kDevice, call);
    OAR_VALIDATE_LOOKUP(m, memory, Kind::kMemory, call, true);
    if (m != nullptr && m->device != device) {
      return fail(state(), OAR_STATUS_INVALID_ARGUMENT, call(),
                  describe(memory, *m) + " is not memory of " + describe(device, *d));
    }
    return OAR_STATUS_OK;
  }

  static oar_status_t memory_free(oar_device_t device, oar_memory_t memory) {
    if (oar_status_t code = check_device_memory("memory_free", device, memory)) return code;
    oar_status_t code = state().api.memory_free(device, memory);
    if (code == OAR_STATUS_OK) forget(state(), memory, "memory_free");
    return code;
  }

  static oar_status_t memory_host_address(oar_device_t device, oar_memory_t memory,
                                          void** out_address) {
    if (oar_status_t code = check_device_memory("memory_host_address", device, memory)) return code;
    return state().api.memory_host_address(device, memory, out_address);
  }

  // A copy or fill on |stream| touching [offset, offset + size) of each
  // memory given (null: a host pointer, unchecked); |src_device| for peers.
  template <typename Call>
  static oar_status_t check_ranges(const Call& call, oar_stream_t stream, oar_memory_t dst,
                                   uint64_t dst_offset, oar_memory_t src, uint64_t src_offset,
                                   uint64_t size, oar_device_t src_device = nullptr) {
    if (stream == nullptr) return OAR_STATUS_OK;
    std::lock_guard<std::mutex> lock(g_mutex);
    std::string problem;
    OAR_VALIDATE_LOOKUP(s, stream, Kind::kStream, call);
    if (dst != nullptr) {
      OAR_VALIDATE_LOOKUP(d, dst, Kind::kMemory, call, true);
      if (other_device(dst, d, stream, *s, &problem)) {
        return fail(state(), OAR_STATUS_INVALID_ARGUMENT, call(), problem);
      }
      // The ABI's code for a range outside its allocation (memory.h).
      if (out_of_range(dst, d, dst_offset, size, &problem)) {
        return fail(state(), OAR_STATUS_OUT_OF_RANGE, call(), problem);
      }
    }
    if (src != nullptr) {
      OAR_VALIDATE_LOOKUP(m, src, Kind::kMemory, call, true);
      if (src_device != nullptr) {
        OAR_VALIDATE_LOOKUP(sd, src_device, Kind::kDevice, call);
        if (m != nullptr && m->device != src_device) {
          return fail(
              state(), OAR_STATUS_INVALID_ARGUMENT, call(),
              describe(src, *m) + " is not memory of the source " + describe(src_device, *sd));
        }
      } else if (other_device(src, m, stream, *s, &problem)) {
        return fail(state(), OAR_STATUS_INVALID_ARGUMENT, call(), problem);
      }
      if (out_of_range(src, m, src_offset, size, &problem)) {
        return fail(state(), OAR_STATUS_OUT_OF_RANGE, call(), problem);
      }
    }
    return OAR_STATUS_OK;
  }

  static oar_status_t memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                      const void* src, uint64_t size) {
    auto call = [&] {
      return "memory_copy_h2d(stream " + hex(stream) + ", memory " + hex(dst) + ", offset " +
             u64(dst_offset) + ", host " + hex(src) + ", size " + u64(size) + ")";
    };
    if (oar_status_t code = check_ranges(call, stream, dst, dst_offset, nullptr, 0, size))
      return code;
    return state().api.memory_copy_h2d(stream, dst, dst_offset, src, size);
  }

  static oar_status_t memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src,
                                      uint64_t src_offset, uint64_t size) {
    auto call = [&] {
      return "memory_copy_d2h(stream " + hex(stream) + ", host " + hex(dst) + ", memory " +
             hex(src) + ", offset " + u64(src_offset) + ", size " + u64(size) + ")";
    };
    if (oar_status_t code = check_ranges(call, stream, nullptr, 0, src, src_offset, size))
      return code;
    return state().api.memory_copy_d2h(stream, dst, src, src_offset, size);
  }

  static oar_status_t memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                      oar_memory_t src, uint64_t src_offset, uint64_t size) {
    auto call = [&] {
      return "memory_copy_d2d(stream " + hex(stream) + ", dst " + hex(dst) + ", dst_offset " +
             u64(dst_offset) + ", src " + hex(src) + ", src_offset " + u64(src_offset) + ", size " +
             u64(size) + ")";
    };
    if (oar_status_t code = check_ranges(call, stream, dst, dst_offset, src, src_offset, size))
      return code;
    return state().api.memory_copy_d2d(stream, dst, dst_offset, src, src_offset, size);
  }

  static oar_status_t memory_copy_peer(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                       oar_device_t src_device, oar_memory_t src,
                                       uint64_t src_offset, uint64_t size) {
    auto call = [&] {
      return "memory_copy_peer(stream " + hex(stream) + ", dst " + hex(dst) + ", dst_offset " +
             u64(dst_offset) + ", src_device " + hex(src_device) + ", src " + hex(src) +
             ", src_offset " + u64(src_offset) + ", size " + u64(size) + ")";
    };
    if (src_device != nullptr) {
      if (oar_status_t code =
              check_ranges(call, stream, dst, dst_offset, src, src_offset, size, src_device))
        return code;
    }
    return state().api.memory_copy_peer(stream, dst, dst_offset, src_device, src, src_offset, size);
  }

  static oar_status_t memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset,
                                  uint8_t value, uint64_t size) {
    auto call = [&] {
      return "memory_fill(stream " + hex(stream) + ", memory " + hex(dst) + ", offset " +
             u64(dst_offset) + ", value " + std::to_string(value) + ", size " + u64(size) + ")";
    };
    if (oar_status_t code = check_ranges(call, stream, dst, dst_offset, nullptr, 0, size))
      return code;
    return state().api.memory_fill(stream, dst, dst_offset, value, size);
  }

#undef OAR_VALIDATE_LOOKUP

  static void install(oar_plugin_api_t* api) {
#define OAR_VALIDATE_WRAP(slot) \
  if (api->slot != nullptr) api->slot = &Wrappers::slot;
    OAR_VALIDATE_WRAP(device_open);
    OAR_VALIDATE_WRAP(device_close);
    OAR_VALIDATE_WRAP(device_synchronize);
    OAR_VALIDATE_WRAP(device_memory_info);
    OAR_VALIDATE_WRAP(stream_create);
    OAR_VALIDATE_WRAP(stream_destroy);
    OAR_VALIDATE_WRAP(stream_synchronize);
    OAR_VALIDATE_WRAP(stream_query);
    OAR_VALIDATE_WRAP(stream_wait_event);
    OAR_VALIDATE_WRAP(stream_add_host_callback);
    OAR_VALIDATE_WRAP(event_create);
    OAR_VALIDATE_WRAP(event_destroy);
    OAR_VALIDATE_WRAP(event_record);
    OAR_VALIDATE_WRAP(event_query);
    OAR_VALIDATE_WRAP(event_synchronize);
    OAR_VALIDATE_WRAP(event_elapsed_ms);
    OAR_VALIDATE_WRAP(memory_allocate);
    OAR_VALIDATE_WRAP(memory_free);
    OAR_VALIDATE_WRAP(memory_host_address);
    OAR_VALIDATE_WRAP(memory_copy_h2d);
    OAR_VALIDATE_WRAP(memory_copy_d2h);
    OAR_VALIDATE_WRAP(memory_copy_d2d);
    OAR_VALIDATE_WRAP(memory_copy_peer);
    OAR_VALIDATE_WRAP(memory_fill);
#undef OAR_VALIDATE_WRAP
  }
};

template <int... I>
void install_slot(int slot, oar_plugin_api_t* api, std::integer_sequence<int, I...>) {
  ((slot == I ? Wrappers<I>::install(api) : void()), ...);
}

}  // namespace

int install(oar_plugin_api_t* api, const oar_host_services_t& host,
            const std::string& plugin_name) {
  int slot = -1;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    for (int i = 0; i < kSlots; ++i) {
      if (!g_states[i].used) {
        slot = i;
        break;
      }
    }
    if (slot < 0) {
      log_line(OAR_LOG_LEVEL_WARNING, plugin_name,
               "validation: more than " + std::to_string(kSlots) +
                   " plugins are validated at once; this one runs unchecked");
      return -1;
    }
    State& state = g_states[slot];
    state.used = true;
    state.api = *api;
    state.host = host;
    state.name = plugin_name;
    state.objects.clear();
  }
  install_slot(slot, api, std::make_integer_sequence<int, kSlots>());
  return slot;
}

void uninstall(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  State& state = g_states[slot];
  state.used = false;
  state.objects.clear();
  state.api = oar_plugin_api_t{};
  state.host = oar_host_services_t{};
}

void add_report(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_reports_mutex);
  g_reports.push_back(message);
}

}  // namespace detail::validate

std::vector<std::string> validation_reports() {
  std::lock_guard<std::mutex> lock(detail::validate::g_reports_mutex);
  return detail::validate::g_reports;
}

void clear_validation_reports() {
  std::lock_guard<std::mutex> lock(detail::validate::g_reports_mutex);
  detail::validate::g_reports.clear();
}

}  // namespace oar
