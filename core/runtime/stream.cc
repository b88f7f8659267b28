#include "oar/stream.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include "core/loader/host_services.h"
#include "core/loader/plugin.h"
#include "core/trace/tracer.h"
#include "oar/buffer.hpp"
#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/event.hpp"

namespace oar {
namespace {

void check_range(const Buffer& buffer, uint64_t offset, uint64_t size, const char* what) {
  if (!buffer.valid()) {
    throw Error(
        buffer.released_by_runtime() ? OAR_STATUS_FAILED_PRECONDITION : OAR_STATUS_INVALID_ARGUMENT,
        std::string(what) + (buffer.released_by_runtime()
                                 ? ": the buffer was released when its runtime was "
                                   "destroyed"
                                 : ": empty buffer"));
  }
  if (offset > buffer.size() || size > buffer.size() - offset) {
    throw Error(
        OAR_STATUS_OUT_OF_RANGE,
        std::string(what) + ": bytes [" + std::to_string(offset) + ", " +
            (offset + size < offset ? std::string("2^64 or more") : std::to_string(offset + size)) +
            ") leave a buffer of " + std::to_string(buffer.size()) + " bytes");
  }
}

void check_same_device(const Stream& stream, const Buffer& buffer, const char* what) {
  if (&buffer.device() != &stream.device()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(what) + ": the buffer is on " +
                                                 buffer.device().name() + " but the stream is on " +
                                                 stream.device().name());
  }
}

// Host callbacks handed to plugins and not called yet, by number. A plugin
// gets the number as user_data, never a pointer, so one that breaks the ABI by
// calling a callback twice (or after stream_add_host_callback failed) finds
// nothing the second time and gets a logged error, not freed memory.
class PendingCallbacks {
 public:
  using Entry = std::function<void(oar_status_t)>;
  uint64_t add(Entry entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t id = next_++;
    pending_.emplace(id, std::move(entry));
    return id;
  }
  // The entry of |id|, removed; false when there is none.
  bool take(uint64_t id, Entry* entry) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return false;
    *entry = std::move(it->second);
    pending_.erase(it);
    return true;
  }

 private:
  std::mutex mutex_;
  uint64_t next_ = 1;
  std::unordered_map<uint64_t, Entry> pending_;
};

// Never destroyed: a plugin's thread may call back while the process exits.
PendingCallbacks& pending_callbacks() {
  static PendingCallbacks* callbacks = new PendingCallbacks();
  return *callbacks;
}

void run_callback(void* user_data, oar_status_t status) {
  PendingCallbacks::Entry entry;
  if (!pending_callbacks().take(reinterpret_cast<uintptr_t>(user_data), &entry)) {
    static std::atomic<bool> logged{false};
    if (logged.exchange(true)) return;  // once per process: it is the plugin's bug
    detail::log_line(OAR_LOG_LEVEL_ERROR, "oar",
                     "a plugin called a host callback that is not pending (called twice, or "
                     "after stream_add_host_callback failed); the call is ignored. Each callback "
                     "must be called exactly once (docs/abi.md); later ones are not logged");
    return;
  }
  try {
    entry(status);
  } catch (...) {
    // An exception cannot cross the plugin's thread; the callback owns its errors.
  }
}

}  // namespace

void Stream::destroy(Device& device, oar_stream_t handle) noexcept {
  // The allocator may hold memory for this stream; once the stream's work is
  // done that memory is anyone's, and the handle must never be used again.
  oar_status_t synced = device.api().stream_synchronize(handle);
  if (synced != OAR_STATUS_OK) (void)device.plugin().status(synced, "stream_synchronize");
  device.forget_stream(handle);
  oar_status_t code = device.api().stream_destroy(handle);
  if (code != OAR_STATUS_OK) (void)device.plugin().status(code, "stream_destroy");
}

void Stream::synchronize() {
  Device& device = live("Stream::synchronize");
  detail::TraceScope trace("stream_synchronize", "sync", device.name(), handle_);
  device.plugin().check(device.api().stream_synchronize(handle_), "stream_synchronize");
}

bool Stream::query() {
  Device& device = live("Stream::query");
  bool idle = false;
  device.plugin().check(device.api().stream_query(handle_, &idle), "stream_query");
  return idle;
}

void Stream::wait(const Event& event) {
  Device& device = live("Stream::wait");
  if (!event.valid()) throw Error(OAR_STATUS_INVALID_ARGUMENT, "Stream::wait: empty event");
  if (&event.device() != &device) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "Stream::wait: the event is on " +
                                                 event.device().name() + ", the stream on " +
                                                 device.name());
  }
  device.plugin().check(device.api().stream_wait_event(handle_, event.handle()),
                        "stream_wait_event");
}

void Stream::add_callback(std::function<void(oar_status_t)> callback) {
  Device& device = live("Stream::add_callback");
  if (device.api().stream_add_host_callback == nullptr) {
    throw Error(OAR_STATUS_UNIMPLEMENTED,
                device.name() + " has no host callbacks (OAR_DEVICE_FEATURE_HOST_CALLBACKS)",
                device.plugin_name());
  }
  const uint64_t id = pending_callbacks().add(std::move(callback));
  void* user_data = reinterpret_cast<void*>(uintptr_t(id));
  const oar_status_t added =
      device.api().stream_add_host_callback(handle_, &run_callback, user_data);
  if (added != OAR_STATUS_OK) {
    PendingCallbacks::Entry never_called;
    pending_callbacks().take(id, &never_called);
    device.plugin().check(added, "stream_add_host_callback");
  }
}

void Stream::copy_from_host(const Buffer& dst, uint64_t dst_offset, const void* src,
                            uint64_t size) {
  live("Stream::copy_from_host");
  detail::TraceScope trace("copy_h2d", "copy", device_->name(), handle_);
  check_range(dst, dst_offset, size, "copy_from_host");
  check_same_device(*this, dst, "copy_from_host");
  device_->plugin().check(
      device_->api().memory_copy_h2d(handle_, dst.memory(), dst.offset() + dst_offset, src, size),
      "memory_copy_h2d");
}

void Stream::copy_to_host(void* dst, const Buffer& src, uint64_t src_offset, uint64_t size) {
  live("Stream::copy_to_host");
  detail::TraceScope trace("copy_d2h", "copy", device_->name(), handle_);
  check_range(src, src_offset, size, "copy_to_host");
  check_same_device(*this, src, "copy_to_host");
  device_->plugin().check(
      device_->api().memory_copy_d2h(handle_, dst, src.memory(), src.offset() + src_offset, size),
      "memory_copy_d2h");
}

void Stream::copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
                  uint64_t size) {
  live("Stream::copy");
  detail::TraceScope trace("copy_d2d", "copy", device_->name(), handle_);
  check_range(dst, dst_offset, size, "copy");
  check_range(src, src_offset, size, "copy");
  check_same_device(*this, dst, "copy");
  if (&src.device() == device_) {
    device_->plugin().check(
        device_->api().memory_copy_d2d(handle_, dst.memory(), dst.offset() + dst_offset,
                                       src.memory(), src.offset() + src_offset, size),
        "memory_copy_d2d");
    return;
  }
  if (&src.device().plugin() != &device_->plugin() || device_->api().memory_copy_peer == nullptr ||
      !device_->has_feature(OAR_DEVICE_FEATURE_PEER_ACCESS) ||
      !src.device().has_feature(OAR_DEVICE_FEATURE_PEER_ACCESS)) {
    throw Error(OAR_STATUS_UNIMPLEMENTED,
                "copy from " + src.device().name() + " to " + device_->name() +
                    ": no peer access between them; stage the data through the host");
  }
  device_->plugin().check(device_->api().memory_copy_peer(
                              handle_, dst.memory(), dst.offset() + dst_offset,
                              src.device().handle(), src.memory(), src.offset() + src_offset, size),
                          "memory_copy_peer");
}

void Stream::fill(const Buffer& dst, uint64_t offset, uint8_t value, uint64_t size) {
  live("Stream::fill");
  detail::TraceScope trace("fill", "copy", device_->name(), handle_);
  check_range(dst, offset, size, "fill");
  check_same_device(*this, dst, "fill");
  device_->plugin().check(
      device_->api().memory_fill(handle_, dst.memory(), dst.offset() + offset, value, size),
      "memory_fill");
}

}  // namespace oar
