// The null plugin: the template a vendor starts from, and the loader's test
// double. It loads, initializes, reports zero devices, and fills every
// required slot with a stub that fails with UNIMPLEMENTED, so that the core
// accepts it and any call that slips past "zero devices" says which slot is
// still to be written. Optional slots are simply absent: the SDK leaves a slot
// NULL ("unsupported") when the class has no member of that name.
//
// To start a plugin: copy this folder, rename the plugin in CMakeLists.txt
// (oar_add_plugin(<name> ...) also names the table: OAR_PLUGIN_NAME), define
// the handle structs your runtime needs, and replace the stubs one by one (see
// README.md). samples/vendor_plugin is the same start carried through to a
// plugin that certifies.
#include "oar/sdk/plugin.hpp"

#include <string>

#include "oar/oar.h"

// Your handles go here, e.g. `struct oar_stream_s { my_queue_t queue; };`.
// The core never looks inside them.

namespace oar::null_plugin {
namespace {

[[noreturn]] void unimplemented(const char* slot) {
  throw oar::sdk::Error(OAR_STATUS_UNIMPLEMENTED,
                        std::string(OAR_PLUGIN_NAME) + " plugin: the required slot " + slot +
                            " is not implemented; a vendor plugin must implement it");
}

}  // namespace

class NullPlugin {
 public:
  // initialize: connect to the vendor runtime here. Throwing oar::sdk::Error
  // makes the core skip the plugin with your message.
  NullPlugin() = default;
  // finalize: release the runtime here.
  ~NullPlugin() = default;

  // Zero devices is the correct answer when the runtime or the hardware is
  // absent, and it is not an error.
  void device_count(int32_t* out_count) {
    oar::sdk::require_not_null(out_count, "out_count");
    *out_count = 0;
  }

  void device_properties(int32_t, oar_device_properties_t*) { unimplemented("device_properties"); }
  void device_open(int32_t, oar_device_t*) { unimplemented("device_open"); }
  void device_close(oar_device_t) { unimplemented("device_close"); }
  void device_synchronize(oar_device_t) { unimplemented("device_synchronize"); }

  void stream_create(oar_device_t, const oar_stream_desc_t*, oar_stream_t*) {
    unimplemented("stream_create");
  }
  void stream_destroy(oar_stream_t) { unimplemented("stream_destroy"); }
  void stream_synchronize(oar_stream_t) { unimplemented("stream_synchronize"); }
  void stream_query(oar_stream_t, bool*) { unimplemented("stream_query"); }
  void stream_wait_event(oar_stream_t, oar_event_t) { unimplemented("stream_wait_event"); }

  void event_create(oar_device_t, uint32_t, oar_event_t*) { unimplemented("event_create"); }
  void event_destroy(oar_event_t) { unimplemented("event_destroy"); }
  void event_record(oar_event_t, oar_stream_t) { unimplemented("event_record"); }
  void event_query(oar_event_t, bool*) { unimplemented("event_query"); }
  void event_synchronize(oar_event_t) { unimplemented("event_synchronize"); }

  void memory_allocate(oar_device_t, uint64_t, uint32_t, oar_memory_t*) {
    unimplemented("memory_allocate");
  }
  void memory_free(oar_device_t, oar_memory_t) { unimplemented("memory_free"); }
  void memory_copy_h2d(oar_stream_t, oar_memory_t, uint64_t, const void*, uint64_t) {
    unimplemented("memory_copy_h2d");
  }
  void memory_copy_d2h(oar_stream_t, void*, oar_memory_t, uint64_t, uint64_t) {
    unimplemented("memory_copy_d2h");
  }
  void memory_copy_d2d(oar_stream_t, oar_memory_t, uint64_t, oar_memory_t, uint64_t, uint64_t) {
    unimplemented("memory_copy_d2d");
  }
  void memory_fill(oar_stream_t, oar_memory_t, uint64_t, uint8_t, uint64_t) {
    unimplemented("memory_fill");
  }

  // Optional slots, added as members when the device supports them:
  // register_kernels, device_memory_info, stream_add_host_callback,
  // event_elapsed_ms, memory_host_address (required once the device lists a
  // host-visible memory kind), memory_copy_peer, comm_*.
  //
  // Streams and events: a device driven from host threads (an emulator, a
  // runtime with blocking calls) derives from oar::sdk::QueueStreams
  // (oar/sdk/queue_streams.hpp), which provides every stream and event slot
  // and device_synchronize; kernels: oar::sdk::KernelTable (oar/sdk/kernel.hpp).
};

}  // namespace oar::null_plugin

// OAR_PLUGIN_NAME is the name given to oar_add_plugin, so that the table and
// the manifest always agree.
OAR_PLUGIN_DEFINE(oar::null_plugin::NullPlugin, OAR_PLUGIN_NAME, "0.1.0", "OAR project")
