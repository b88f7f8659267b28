#include "oar/event.hpp"

#include <utility>

#include "core/loader/plugin.h"
#include "core/trace/tracer.h"
#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar {

void Event::destroy(Device& device, oar_event_t handle) noexcept {
  oar_status_t code = device.api().event_destroy(handle);
  if (code != OAR_STATUS_OK) (void)device.plugin().status(code, "event_destroy");
}

void Event::record(Stream& stream) {
  Device& device = live("Event::record");
  if (&stream.device() != &device) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "Event::record: the event is on " + device.name() +
                                                 ", the stream on " + stream.device().name());
  }
  device.plugin().check(device.api().event_record(handle_, stream.handle()), "event_record");
}

bool Event::query() {
  Device& device = live("Event::query");
  bool done = false;
  device.plugin().check(device.api().event_query(handle_, &done), "event_query");
  return done;
}

void Event::synchronize() {
  Device& device = live("Event::synchronize");
  detail::TraceScope trace("event_synchronize", "sync", device.name(), handle_);
  device.plugin().check(device.api().event_synchronize(handle_), "event_synchronize");
}

float Event::elapsed_ms_since(const Event& start) const {
  Device& device = live("Event::elapsed_ms_since");
  if (device.api().event_elapsed_ms == nullptr) {
    throw Error(OAR_STATUS_UNIMPLEMENTED, device.name() + " has no timing events",
                device.plugin_name());
  }
  if (&start.live("Event::elapsed_ms_since") != &device) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "elapsed time between events of two devices");
  }
  float ms = 0;
  device.plugin().check(device.api().event_elapsed_ms(start.handle_, handle_, &ms),
                        "event_elapsed_ms");
  return ms;
}

}  // namespace oar
