// oar::Event: a marker on a stream. It completes when the work submitted to
// the stream before the record has completed; recording again moves it.
#pragma once

#include <cstdint>

#include "oar/handles.h"
#include "oar/tracked.hpp"

namespace oar {

class Device;
class Stream;

class Event final : public detail::DeviceHandle<Event, oar_event_t> {
 public:
  Event() = default;
  ~Event() { release(); }
  Event(Event&&) noexcept = default;
  Event& operator=(Event&&) noexcept = default;

  void record(Stream& stream);
  // True when complete (an event never recorded is complete).
  bool query();
  void synchronize();
  // Milliseconds from |start| to this event; both timing events, both done.
  float elapsed_ms_since(const Event& start) const;

 private:
  friend class Device;
  friend class detail::DeviceHandle<Event, oar_event_t>;
  Event(Device* device, oar_event_t handle) : DeviceHandle(device, handle) {}
  static void destroy(Device& device, oar_event_t handle) noexcept;
  const char* what() const noexcept override { return "event"; }
};

}  // namespace oar
