// oar::Event: a marker on a stream. It completes when the work submitted to
// the stream before the record has completed; recording again moves it.
#pragma once

#include <cstdint>

#include "oar/handles.h"
#include "oar/tracked.hpp"

namespace oar {

class Device;
class Stream;

class Event : private detail::Tracked {
 public:
  Event() = default;
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  bool valid() const { return handle_ != nullptr; }
  oar_event_t handle() const { return handle_; }
  Device& device() const { return *device_; }

  void record(Stream& stream);
  // True when complete (an event never recorded is complete).
  bool query();
  void synchronize();
  // Milliseconds from |start| to this event; both timing events, both done.
  float elapsed_ms_since(const Event& start) const;

 private:
  friend class Device;
  Event(Device* device, oar_event_t handle);
  void release() noexcept override;
  const char* what() const noexcept override { return "event"; }

  Device* device_ = nullptr;
  oar_event_t handle_ = nullptr;
};

}  // namespace oar
