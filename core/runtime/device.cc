#include "oar/device.hpp"

#include <cstdio>
#include <cstring>
#include <typeinfo>

#include "core/alloc/caching_allocator.h"
#include "core/loader/environment.h"
#include "core/loader/host_services.h"
#include "core/loader/plugin.h"
#include "core/trace/tracer.h"
#include "core/validate/validator.h"
#include "oar/error.hpp"

namespace oar {
namespace detail {

// The allocator's view of a device: plugin allocations and events.
class DeviceBackend final : public alloc::AllocatorBackend {
 public:
  explicit DeviceBackend(Device* device) : device_(device) {}

  Status allocate(size_t size, void** out_memory) override {
    oar_memory_t memory = nullptr;
    oar_status_t code =
        device_->api().memory_allocate(device_->handle(), size, OAR_MEMORY_KIND_DEVICE, &memory);
    if (code != OAR_STATUS_OK) return device_->plugin().status(code, "memory_allocate");
    *out_memory = memory;
    return Status();
  }
  // memory_free demands that no pending work uses the memory, and the
  // allocator cannot know which streams touched a segment it releases (cache
  // trimming, out-of-memory retry, shutdown): wait for the whole device first.
  void deallocate(void* memory) override {
    oar_status_t synced = device_->api().device_synchronize(device_->handle());
    if (synced != OAR_STATUS_OK) (void)device_->plugin().status(synced, "device_synchronize");
    oar_status_t code =
        device_->api().memory_free(device_->handle(), static_cast<oar_memory_t>(memory));
    if (code != OAR_STATUS_OK) {
      log_line(OAR_LOG_LEVEL_WARNING, device_->name(),
               device_->plugin().status(code, "memory_free").to_string());
    }
  }
  Status record_event(void* stream, void** out_event) override {
    oar_event_t event = nullptr;
    const oar_plugin_api_t& api = device_->api();
    oar_status_t code = api.event_create(device_->handle(), 0, &event);
    if (code != OAR_STATUS_OK) return device_->plugin().status(code, "event_create");
    code = api.event_record(event, static_cast<oar_stream_t>(stream));
    if (code != OAR_STATUS_OK) {
      Status status = device_->plugin().status(code, "event_record");
      api.event_destroy(event);
      return status;
    }
    *out_event = event;
    return Status();
  }
  Status query_event(void* event, bool* out_done) override {
    oar_status_t code = device_->api().event_query(static_cast<oar_event_t>(event), out_done);
    return device_->plugin().status(code, "event_query");
  }
  Status synchronize_event(void* event) override {
    oar_status_t code = device_->api().event_synchronize(static_cast<oar_event_t>(event));
    return device_->plugin().status(code, "event_synchronize");
  }
  void release_event(void* event) override {
    device_->api().event_destroy(static_cast<oar_event_t>(event));
  }

 private:
  Device* device_;
};

struct DeviceMemory {
  DeviceMemory(Device* device, alloc::AllocatorConfig config)
      : backend(device), allocator(backend, config) {}
  DeviceBackend backend;
  alloc::CachingAllocator allocator;
};

namespace {

alloc::AllocatorConfig allocator_config(const Device& device) {
  auto text = loader::get_environment("OAR_ALLOC_CONF");
  alloc::AllocatorConfig config;
  if (text) {
    auto parsed = alloc::AllocatorConfig::parse(*text);
    // The parser's messages name OAR_ALLOC_CONF already.
    if (!parsed.ok()) throw Error(parsed.status().code(), parsed.status().message());
    config = parsed.value();
  }
  if (device.properties().min_alignment > config.alignment) {
    config.alignment = device.properties().min_alignment;
  }
  return config;
}

}  // namespace
}  // namespace detail

Device::Device(detail::Plugin* plugin, int32_t index, const oar_device_properties_t& properties)
    : plugin_(plugin),
      api_(&plugin->api()),
      index_(index),
      properties_(properties),
      name_(plugin->name() + ":" + std::to_string(index)) {}

Device::~Device() { close(); }

const std::string& Device::plugin_name() const { return plugin_->name(); }

oar_device_t Device::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  check_open("opening the device");
  oar_device_t handle = handle_.load(std::memory_order_relaxed);
  if (handle != nullptr) return handle;
  plugin_->check(api_->device_open(index_, &handle), "device_open");
  handle_.store(handle, std::memory_order_release);
  return handle;
}

void Device::check_open(const char* operation) const {
  if (closed_.load(std::memory_order_acquire)) {
    throw Error(OAR_STATUS_FAILED_PRECONDITION,
                std::string(operation) + ": " + name_ +
                    " is closed (its runtime was destroyed or is being destroyed)",
                plugin_->name());
  }
}

Stream& Device::default_stream() {
  if (Stream* stream = default_stream_.load(std::memory_order_acquire)) return *stream;
  std::lock_guard<std::mutex> lock(create_mutex_);
  check_open("default_stream");
  if (Stream* stream = default_stream_.load(std::memory_order_relaxed)) return *stream;
  default_stream_owner_ = std::make_unique<Stream>(create_stream());
  default_stream_.store(default_stream_owner_.get(), std::memory_order_release);
  return *default_stream_owner_;
}

Stream Device::create_stream(int32_t priority) {
  oar_stream_desc_t desc{};
  desc.struct_size = OAR_STREAM_DESC_STRUCT_SIZE;
  desc.priority = priority;
  oar_stream_t stream = nullptr;
  plugin_->check(api_->stream_create(handle(), &desc, &stream), "stream_create");
  return Stream(this, stream);
}

Event Device::create_event(uint32_t flags) {
  if ((flags & OAR_EVENT_FLAG_TIMING) && !has_feature(OAR_DEVICE_FEATURE_TIMING_EVENTS)) {
    throw Error(OAR_STATUS_UNIMPLEMENTED,
                name_ +
                    " has no timing events (OAR_DEVICE_FEATURE_TIMING_EVENTS); create the "
                    "event without OAR_EVENT_FLAG_TIMING",
                plugin_->name());
  }
  oar_event_t event = nullptr;
  plugin_->check(api_->event_create(handle(), flags, &event), "event_create");
  return Event(this, event);
}

detail::DeviceMemory& Device::memory_or_create() {
  if (detail::DeviceMemory* memory = this->memory()) return *memory;
  std::lock_guard<std::mutex> lock(create_mutex_);
  check_open("allocate");
  if (detail::DeviceMemory* memory = memory_.load(std::memory_order_relaxed)) return *memory;
  memory_owner_ = std::make_unique<detail::DeviceMemory>(this, detail::allocator_config(*this));
  memory_.store(memory_owner_.get(), std::memory_order_release);
  return *memory_owner_;
}

Buffer Device::allocate(uint64_t size, Stream* stream) {
  if (stream == nullptr) stream = &default_stream();
  if (&stream->device() != this) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "allocate on " + name_ + " with a stream of " + stream->device().name());
  }
  detail::DeviceMemory& memory = memory_or_create();
  Buffer buffer(size, OAR_MEMORY_KIND_DEVICE, Buffer::Owner::kCached);
  // A cached buffer is found again at shutdown through its block's owner,
  // kept under the allocator's lock: no second lock per allocate and free.
  detail::Tracked& tracked = buffer;
  auto block = memory.allocator.allocate(size, stream->handle(), &tracked);
  if (!block.ok()) throw Error(block.status().code(), block.status().message(), plugin_->name());
  buffer.device_ = this;
  buffer.memory_ = static_cast<oar_memory_t>(block.value()->memory());
  buffer.offset_ = block.value()->offset();
  buffer.block_ = block.value();
  return buffer;
}

Buffer Device::allocate_uncached(uint64_t size, uint32_t kind) {
  if (!has_memory_kind(kind)) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                name_ + " does not offer memory kind " + std::to_string(kind) +
                    " (see properties().memory_kinds)",
                plugin_->name());
  }
  oar_memory_t memory = nullptr;
  plugin_->check(api_->memory_allocate(handle(), size, kind, &memory), "memory_allocate");
  Buffer buffer;
  buffer.device_ = this;
  buffer.memory_ = memory;
  buffer.size_ = size;
  buffer.kind_ = kind;
  buffer.owner_ = Buffer::Owner::kDevice;
  buffer.track(this);
  return buffer;
}

void Device::free_block(void* block) noexcept {
  if (detail::DeviceMemory* memory = this->memory()) {
    memory->allocator.free(static_cast<alloc::Block*>(block));
  }
}

void Device::record_block_stream(void* block, Stream& stream) {
  if (detail::DeviceMemory* memory = this->memory()) {
    memory->allocator.record_stream(static_cast<alloc::Block*>(block), stream.handle());
  }
}

void Device::forget_stream(oar_stream_t stream) noexcept {
  if (detail::DeviceMemory* memory = this->memory()) memory->allocator.forget_stream(stream);
}

MemoryStats Device::memory_stats() const {
  detail::DeviceMemory* memory = this->memory();
  return memory != nullptr ? memory->allocator.stats() : MemoryStats();
}

void Device::reset_peak_memory_stats() {
  if (detail::DeviceMemory* memory = this->memory()) memory->allocator.reset_peak_stats();
}

void Device::empty_cache() {
  detail::DeviceMemory* memory = this->memory();
  if (memory == nullptr) return;
  Status status = memory->allocator.empty_cache();
  if (!status.ok()) throw Error(status.code(), status.message(), plugin_->name());
}

MemoryInfo Device::memory_info() {
  MemoryInfo info;
  if (api_->device_memory_info == nullptr) {
    info.total = properties_.total_memory;
    info.free = properties_.total_memory;
    return info;
  }
  plugin_->check(api_->device_memory_info(handle(), &info.free, &info.total), "device_memory_info");
  return info;
}

void Device::synchronize() {
  detail::TraceScope trace("device_synchronize", "sync", name_, this);
  plugin_->check(api_->device_synchronize(handle()), "device_synchronize");
}

void Device::upload(const Buffer& dst, uint64_t dst_offset, const void* src, uint64_t size) {
  Stream& stream = default_stream();
  stream.copy_from_host(dst, dst_offset, src, size);
  stream.synchronize();
}

void Device::download(void* dst, const Buffer& src, uint64_t src_offset, uint64_t size) {
  Stream& stream = default_stream();
  stream.copy_to_host(dst, src, src_offset, size);
  stream.synchronize();
}

void Device::track(detail::Tracked* object) {
  std::lock_guard<std::mutex> lock(mutex_);
  object->released_by_runtime_ = false;
  object->prev_ = nullptr;
  object->next_ = tracked_;
  if (tracked_ != nullptr) tracked_->prev_ = object;
  tracked_ = object;
}

// A cached buffer is tracked as its block's owner in the allocator (see
// allocate), not in tracked_. Decided from the object's type and its own
// owner_, which only its owner writes (the list links are written by other
// threads under mutex_). (A lambda: it has Device's access to Buffer.)
void Device::untrack(detail::Tracked* object) {
  auto cached_buffer = [](detail::Tracked* t) {
    return typeid(*t) == typeid(Buffer) &&
           static_cast<Buffer*>(t)->owner_ == Buffer::Owner::kCached;
  };
  if (cached_buffer(object)) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (object->prev_ != nullptr)
    object->prev_->next_ = object->next_;
  else if (tracked_ == object)
    tracked_ = object->next_;
  if (object->next_ != nullptr) object->next_->prev_ = object->prev_;
  object->prev_ = object->next_ = nullptr;
}

void Device::retrack(detail::Tracked* object, detail::Tracked* previous) {
  auto cached_buffer = [](detail::Tracked* t) {  // as in untrack
    return typeid(*t) == typeid(Buffer) &&
           static_cast<Buffer*>(t)->owner_ == Buffer::Owner::kCached;
  };
  if (cached_buffer(object)) {  // |object| has |previous|'s fields already
    object->released_by_runtime_ = false;
    if (detail::DeviceMemory* memory = this->memory()) {
      memory->allocator.set_owner(static_cast<alloc::Block*>(static_cast<Buffer*>(object)->block_),
                                  object);
    }
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  object->released_by_runtime_ = false;
  object->prev_ = previous->prev_;
  object->next_ = previous->next_;
  if (object->prev_ != nullptr)
    object->prev_->next_ = object;
  else
    tracked_ = object;
  if (object->next_ != nullptr) object->next_->prev_ = object;
  previous->prev_ = previous->next_ = nullptr;
}

void Device::close() noexcept {
  // The ABI's shutdown order: buffers, then the allocator's cached memory,
  // then events and streams, then the device itself.
  // Names a leftover for the validation layer's leak report.
  auto leaked_name = [](detail::Tracked* victim) -> std::string {
    char text[128];
    if (std::strcmp(victim->what(), "buffer") == 0) {
      auto* buffer = static_cast<Buffer*>(victim);
      std::snprintf(text, sizeof(text), "of %llu bytes at offset %llu of memory %p",
                    static_cast<unsigned long long>(buffer->size()),
                    static_cast<unsigned long long>(buffer->offset()),
                    static_cast<void*>(buffer->memory()));
    } else if (std::strcmp(victim->what(), "stream") == 0) {
      std::snprintf(text, sizeof(text), "%p",
                    static_cast<void*>(static_cast<Stream*>(victim)->handle()));
    } else if (std::strcmp(victim->what(), "event") == 0) {
      std::snprintf(text, sizeof(text), "%p",
                    static_cast<void*>(static_cast<Event*>(victim)->handle()));
    } else {
      text[0] = '\0';
    }
    return text;
  };
  auto release_one = [&](detail::Tracked* victim) {
    if (victim != default_stream_.load(std::memory_order_relaxed)) {
      std::string message = std::string("releasing a ") + victim->what() +
                            " the program did not destroy before shutdown";
      if (plugin_->validating()) {
        // A leak of the framework's: named, and kept for validation_reports().
        message = "validation: shutdown of " + name_ + ": leaked " + victim->what() + " " +
                  leaked_name(victim) + ", released by the runtime";
        detail::validate::add_report(message);
      }
      detail::log_line(plugin_->validating() ? OAR_LOG_LEVEL_WARNING : OAR_LOG_LEVEL_INFO, name_,
                       message);
    }
    victim->released_by_runtime_ = true;
    victim->release();
  };
  auto release_all = [&](bool buffers) {
    if (buffers) {
      // Cached buffers first: their blocks' owners in the allocator.
      if (detail::DeviceMemory* memory = this->memory()) {
        for (void* owner : memory->allocator.owners()) {
          release_one(static_cast<detail::Tracked*>(owner));
        }
      }
    }
    for (;;) {
      detail::Tracked* victim = nullptr;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        for (detail::Tracked* t = tracked_; t != nullptr; t = t->next_) {
          bool is_buffer = std::strcmp(t->what(), "buffer") == 0;
          if (is_buffer == buffers) {
            victim = t;
            break;
          }
        }
      }
      if (victim == nullptr) return;
      release_one(victim);
    }
  };
  {
    // From here on nothing creates a default stream or an allocator again.
    std::lock_guard<std::mutex> lock(create_mutex_);
    closed_.store(true, std::memory_order_release);
  }
  release_all(true);
  memory_.store(nullptr, std::memory_order_release);
  memory_owner_.reset();
  release_all(false);
  default_stream_.store(nullptr, std::memory_order_release);
  default_stream_owner_.reset();
  std::lock_guard<std::mutex> lock(mutex_);
  oar_device_t handle = handle_.exchange(nullptr);
  if (handle != nullptr) {
    oar_status_t code = api_->device_close(handle);
    if (code != OAR_STATUS_OK) {
      detail::log_line(OAR_LOG_LEVEL_WARNING, name_,
                       plugin_->status(code, "device_close").to_string());
    }
  }
}

namespace detail {

void throw_empty_object(const char* operation, const char* object, bool released_by_runtime) {
  std::string message = std::string(operation) + ": the " + object + " is empty: ";
  message += released_by_runtime
                 ? "its runtime was destroyed, which released it (objects die with their "
                   "Runtime; see docs/runtime.md)"
                 : "it was default-constructed or moved from";
  throw Error(OAR_STATUS_FAILED_PRECONDITION, message);
}

void Tracked::track(Device* device) noexcept { device->track(this); }
void Tracked::untrack(Device* device) noexcept { device->untrack(this); }
void Tracked::retrack(Device* device, Tracked* previous) noexcept {
  device->retrack(this, previous);
}

}  // namespace detail
}  // namespace oar
