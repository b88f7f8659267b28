// oar::Stream: an ordered queue of work on one device. Work on one stream runs
// in submission order; across streams only events order work. Copies and fills
// return before the data moved: the host side of a copy must stay alive and
// unchanged until the stream (or an event after it) says it is done.
#pragma once

#include <cstdint>
#include <functional>

#include "oar/handles.h"
#include "oar/status.h"
#include "oar/tracked.hpp"

namespace oar {

class Buffer;
class Device;
class Event;

class Stream final : public detail::DeviceHandle<Stream, oar_stream_t> {
 public:
  Stream() = default;
  ~Stream() { release(); }
  Stream(Stream&&) noexcept = default;
  Stream& operator=(Stream&&) noexcept = default;

  // Blocks until all work submitted so far is done; throws the stream's error.
  void synchronize();
  // True when all work submitted so far is done; throws the stream's error.
  bool query();
  // Later work on this stream waits for |event| (which may be another
  // stream's); the host does not block.
  void wait(const Event& event);
  // Calls |callback| with the stream's status after all work submitted so far.
  // Requires OAR_DEVICE_FEATURE_HOST_CALLBACKS.
  void add_callback(std::function<void(oar_status_t)> callback);

  // Offsets are relative to the buffer; ranges are checked before the plugin
  // is called (OUT_OF_RANGE).
  void copy_from_host(const Buffer& dst, uint64_t dst_offset, const void* src, uint64_t size);
  void copy_to_host(void* dst, const Buffer& src, uint64_t src_offset, uint64_t size);
  // Device to device; across devices of one plugin through memory_copy_peer.
  void copy(const Buffer& dst, uint64_t dst_offset, const Buffer& src, uint64_t src_offset,
            uint64_t size);
  void fill(const Buffer& dst, uint64_t offset, uint8_t value, uint64_t size);

 private:
  friend class Device;
  friend class detail::DeviceHandle<Stream, oar_stream_t>;
  Stream(Device* device, oar_stream_t handle) : DeviceHandle(device, handle) {}
  static void destroy(Device& device, oar_stream_t handle) noexcept;
  const char* what() const noexcept override { return "stream"; }
};

}  // namespace oar
