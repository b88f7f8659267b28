// Every documented error code of docs/abi.md, provoked through the plugin's
// slots directly (the core would refuse some calls before the plugin sees
// them): the code must be the documented one, a message must come with it
// (P8), and out-parameters must stay unchanged (P9).
#include <chrono>
#include <cstring>
#include <thread>

#include "conformance/suites/abi/abi_util.h"

namespace oar::conformance::abi {
namespace {

using namespace std::chrono_literals;

// Ranges that leave an allocation of |size| bytes: one byte past the end, a
// start past the end, and an offset whose end overflows 64 bits.
struct BadRange {
  uint64_t offset, size;
  const char* what;
};
std::vector<BadRange> bad_ranges(uint64_t size) {
  return {{size - 1, 2, "one byte past the end"},
          {size + 1, 0, "an offset past the end"},
          {UINT64_MAX - 1, 4, "an end that overflows 64 bits"}};
}

void copy_out_of_range(TestContext& context) {
  Device& device = context.device;
  const oar_plugin_api_t& api = device.api();
  constexpr uint64_t kSize = 4096;
  Stream stream = device.create_stream();
  Buffer a = device.allocate_uncached(kSize);
  Buffer b = device.allocate_uncached(kSize);
  std::vector<uint8_t> host(kSize + 16, 0x33);
  const oar_stream_t s = stream.handle();
  for (const BadRange& r : bad_ranges(kSize)) {
    const std::string range = std::string(" with ") + r.what;
    expect_status(device, api.memory_copy_h2d(s, a.memory(), r.offset, host.data(), r.size),
                  OAR_STATUS_OUT_OF_RANGE, "memory_copy_h2d" + range);
    expect_status(device, api.memory_copy_d2h(s, host.data(), a.memory(), r.offset, r.size),
                  OAR_STATUS_OUT_OF_RANGE, "memory_copy_d2h" + range);
    expect_status(device, api.memory_copy_d2d(s, b.memory(), 0, a.memory(), r.offset, r.size),
                  OAR_STATUS_OUT_OF_RANGE, "memory_copy_d2d source" + range);
    expect_status(device, api.memory_copy_d2d(s, b.memory(), r.offset, a.memory(), 0, r.size),
                  OAR_STATUS_OUT_OF_RANGE, "memory_copy_d2d destination" + range);
    expect_status(device, api.memory_fill(s, a.memory(), r.offset, 0, r.size),
                  OAR_STATUS_OUT_OF_RANGE, "memory_fill" + range);
  }
  stream.synchronize();  // a refused call must not have failed the stream
}

void allocate_bad_kind(TestContext& context) {
  Device& device = context.device;
  const uint32_t listed = device.properties().memory_kinds;
  std::vector<std::pair<uint32_t, std::string>> kinds = {
      {0, "kind 0"},
      {1u << 7, "an unknown kind bit"},
      {OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_UNIFIED, "two kinds at once"}};
  for (uint32_t kind : {OAR_MEMORY_KIND_HOST_PINNED, OAR_MEMORY_KIND_UNIFIED}) {
    if (!(listed & kind)) kinds.push_back({kind, std::string("unlisted kind ") + kind_name(kind)});
  }
  for (const auto& [kind, what] : kinds) {
    oar_memory_t memory = sentinel<oar_memory_t>();
    expect_status(device, device.api().memory_allocate(device.handle(), 64, kind, &memory),
                  OAR_STATUS_INVALID_ARGUMENT, "memory_allocate with " + what);
    expect(memory == sentinel<oar_memory_t>(),
           "memory_allocate with " + what + " failed but changed out_memory (policy P9)");
  }
}

void allocate_above_max(TestContext& context) {
  Device& device = context.device;
  const uint64_t max = device.properties().max_allocation_size;
  if (max == UINT64_MAX) skip("max_allocation_size is UINT64_MAX: nothing is above it");
  oar_memory_t memory = sentinel<oar_memory_t>();
  expect_status(
      device,
      device.api().memory_allocate(device.handle(), max + 1, OAR_MEMORY_KIND_DEVICE, &memory),
      OAR_STATUS_INVALID_ARGUMENT, "memory_allocate(max_allocation_size + 1)");
  expect(memory == sentinel<oar_memory_t>(),
         "memory_allocate above max_allocation_size changed out_memory (policy P9)");
}

void event_unknown_flags(TestContext& context) {
  Device& device = context.device;
  oar_event_t event = sentinel<oar_event_t>();
  expect_status(device, device.api().event_create(device.handle(), 1u << 7, &event),
                OAR_STATUS_INVALID_ARGUMENT, "event_create with an unknown flag");
  expect(event == sentinel<oar_event_t>(), "event_create failed but changed out_event (P9)");
}

void event_timing_without_feature(TestContext& context) {
  Device& device = context.device;
  if (device.has_feature(OAR_DEVICE_FEATURE_TIMING_EVENTS)) {
    skip("the device lists OAR_DEVICE_FEATURE_TIMING_EVENTS");
  }
  oar_event_t event = sentinel<oar_event_t>();
  expect_status(device, device.api().event_create(device.handle(), OAR_EVENT_FLAG_TIMING, &event),
                OAR_STATUS_UNIMPLEMENTED, "event_create(TIMING) without TIMING_EVENTS");
  expect(event == sentinel<oar_event_t>(), "event_create failed but changed out_event (P9)");
}

void wait_unrecorded(TestContext& context) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Event event = device.create_event();
  expect_status(device, device.api().stream_wait_event(stream.handle(), event.handle()),
                OAR_STATUS_FAILED_PRECONDITION,
                "stream_wait_event on an event never recorded (policy P16)");
  stream.synchronize();
}

void elapsed_preconditions(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_TIMING_EVENTS);
  const oar_plugin_api_t& api = device.api();
  Stream stream = device.create_stream();
  Event plain_start = device.create_event(), plain_end = device.create_event();
  Event start = device.create_event(OAR_EVENT_FLAG_TIMING);
  Event end = device.create_event(OAR_EVENT_FLAG_TIMING);
  const float kSentinel = -12345.0f;
  auto expect_refused = [&](const Event& a, const Event& b, const std::string& what) {
    float ms = kSentinel;
    expect_status(device, api.event_elapsed_ms(a.handle(), b.handle(), &ms),
                  OAR_STATUS_FAILED_PRECONDITION, "event_elapsed_ms " + what);
    expect(ms == kSentinel, "event_elapsed_ms " + what + " failed but changed out_ms (P9)");
  };
  expect_refused(start, end, "of timing events never recorded");
  plain_start.record(stream);
  plain_end.record(stream);
  stream.synchronize();
  expect_refused(plain_start, plain_end, "of events created without OAR_EVENT_FLAG_TIMING");
  if (device.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS)) {
    start.record(stream);
    Gate gate(stream);
    end.record(stream);
    float ms = kSentinel;
    oar_status_t status = api.event_elapsed_ms(start.handle(), end.handle(), &ms);
    gate.release();
    stream.synchronize();
    expect_status(device, status, OAR_STATUS_FAILED_PRECONDITION,
                  "event_elapsed_ms with an end event not yet complete");
    expect(ms == kSentinel, "event_elapsed_ms of an incomplete event changed out_ms (P9)");
  }
}

void properties_bad_index(TestContext& context) {
  Device& device = context.device;
  const oar_plugin_api_t& api = device.api();
  int32_t count = -1;
  expect_status(device, api.device_count(&count), OAR_STATUS_OK, "device_count");
  for (int32_t index : {count, -1}) {
    oar_device_properties_t properties;
    std::memset(&properties, 0xCD, sizeof properties);
    properties.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    oar_device_properties_t before = properties;
    expect_status(device, api.device_properties(index, &properties), OAR_STATUS_OUT_OF_RANGE,
                  "device_properties(index " + std::to_string(index) + ")");
    expect(std::memcmp(&before, &properties, sizeof properties) == 0,
           "device_properties with a bad index failed but wrote its out-struct (P9)");
  }
}

void properties_small_struct(TestContext& context) {
  Device& device = context.device;
  oar_device_properties_t properties;
  std::memset(&properties, 0xCD, sizeof properties);
  properties.struct_size = sizeof(size_t);
  expect_status(device, device.api().device_properties(device.index(), &properties),
                OAR_STATUS_INVALID_ARGUMENT,
                "device_properties with struct_size below the ABI 1.0 size");
}

void open_bad_index(TestContext& context) {
  Device& device = context.device;
  int32_t count = -1;
  expect_status(device, device.api().device_count(&count), OAR_STATUS_OK, "device_count");
  oar_device_t opened = sentinel<oar_device_t>();
  expect_status(device, device.api().device_open(count, &opened), OAR_STATUS_OUT_OF_RANGE,
                "device_open(index " + std::to_string(count) + ")");
  expect(opened == sentinel<oar_device_t>(), "device_open failed but changed out_device (P9)");
}

void null_callback(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  Stream stream = device.create_stream();
  expect_status(device, device.api().stream_add_host_callback(stream.handle(), nullptr, nullptr),
                OAR_STATUS_INVALID_ARGUMENT, "stream_add_host_callback(NULL callback)");
  stream.synchronize();
}

}  // namespace

void register_error_tests(Registry& registry, const oar_device_properties_t&) {
  add(registry, "errors", "copy_and_fill_out_of_range_is_out_of_range", copy_out_of_range);
  add(registry, "errors", "allocate_unlisted_kind_is_invalid_argument", allocate_bad_kind);
  add(registry, "errors", "allocate_above_max_allocation_size_is_invalid_argument",
      allocate_above_max);
  add(registry, "errors", "event_create_unknown_flags_is_invalid_argument", event_unknown_flags);
  add(registry, "errors", "event_create_timing_without_feature_is_unimplemented",
      event_timing_without_feature);
  add(registry, "errors", "wait_on_unrecorded_event_is_failed_precondition", wait_unrecorded);
  add(registry, "errors", "elapsed_ms_without_complete_timing_events_is_failed_precondition",
      elapsed_preconditions);
  add(registry, "errors", "device_properties_bad_index_is_out_of_range", properties_bad_index);
  add(registry, "errors", "device_properties_small_struct_size_is_invalid_argument",
      properties_small_struct);
  add(registry, "errors", "device_open_bad_index_is_out_of_range", open_bad_index);
  add(registry, "errors", "host_callback_null_is_invalid_argument", null_callback);
}

}  // namespace oar::conformance::abi
