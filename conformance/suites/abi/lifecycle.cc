// Lifecycle: many streams and events, NULL releases, properties and slots.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <future>
#include <thread>

#include "conformance/suites/abi/abi_util.h"

namespace oar::conformance::abi {
namespace {

using namespace std::chrono_literals;

void many_streams(TestContext& context) {
  Device& device = context.device;
  // Churned through the slots: the C++ Stream synchronizes before it destroys,
  // and 256 synchronizes would cost a slow device minutes.
  const oar_plugin_api_t& api = device.api();
  for (int i = 0; i < 256; ++i) {
    oar_stream_t churn = nullptr;
    expect_status(device, api.stream_create(device.handle(), nullptr, &churn), OAR_STATUS_OK,
                  "stream_create (" + std::to_string(i + 1) + " of 256 created and destroyed)");
    expect_status(device, api.stream_destroy(churn), OAR_STATUS_OK, "stream_destroy");
  }
  std::vector<Stream> streams;
  for (int i = 0; i < 32; ++i) {
    streams.push_back(device.create_stream(i % 3 == 0   ? OAR_STREAM_PRIORITY_NORMAL
                                           : i % 3 == 1 ? OAR_STREAM_PRIORITY_HIGH
                                                        : OAR_STREAM_PRIORITY_LOW));
  }
  Buffer buffer = device.allocate_uncached(64 * streams.size());
  std::vector<uint8_t> result(64 * streams.size(), 0);
  for (size_t i = 0; i < streams.size(); ++i) {
    streams[i].fill(buffer, 64 * i, uint8_t(i + 1), 64);
    streams[i].copy_to_host(result.data() + 64 * i, buffer, 64 * i, 64);
  }
  device.synchronize();
  std::vector<uint8_t> want(result.size());
  for (size_t i = 0; i < streams.size(); ++i) std::memset(want.data() + 64 * i, int(i + 1), 64);
  expect_bytes("32 live streams, each filling and reading back its own 64 bytes", result, want);
}

void many_events(TestContext& context) {
  Device& device = context.device;
  for (int i = 0; i < 256; ++i) Event churn = device.create_event();
  Stream stream = device.create_stream();
  std::vector<Event> events;
  for (int i = 0; i < 256; ++i) {
    events.push_back(device.create_event());
    events.back().record(stream);
  }
  stream.synchronize();
  for (size_t i = 0; i < events.size(); ++i) {
    expect(events[i].query(), "event " + std::to_string(i) +
                                  " recorded before stream_synchronize is not complete after it");
  }
}

void stream_descriptors(TestContext& context) {
  Device& device = context.device;
  const oar_plugin_api_t& api = device.api();
  std::vector<oar_stream_t> created;
  oar_stream_t stream = nullptr;
  expect_status(device, api.stream_create(device.handle(), nullptr, &stream), OAR_STATUS_OK,
                "stream_create(desc NULL)");
  expect(stream != nullptr, "stream_create(desc NULL) returned OK and a NULL stream");
  created.push_back(stream);
  for (int32_t priority :
       {OAR_STREAM_PRIORITY_NORMAL, OAR_STREAM_PRIORITY_HIGH, OAR_STREAM_PRIORITY_LOW}) {
    oar_stream_desc_t desc{OAR_STREAM_DESC_STRUCT_SIZE, priority, 0};
    stream = nullptr;
    expect_status(device, api.stream_create(device.handle(), &desc, &stream), OAR_STATUS_OK,
                  "stream_create(priority " + std::to_string(priority) + ")");
    expect(stream != nullptr, "stream_create returned OK and a NULL stream");
    created.push_back(stream);
  }
  for (oar_stream_t s : created) {
    expect_status(device, api.stream_synchronize(s), OAR_STATUS_OK, "stream_synchronize");
    expect_status(device, api.stream_destroy(s), OAR_STATUS_OK, "stream_destroy");
  }
}

void null_releases(TestContext& context) {
  Device& device = context.device;
  const oar_plugin_api_t& api = device.api();
  expect_status(device, api.stream_destroy(nullptr), OAR_STATUS_OK, "stream_destroy(NULL)");
  expect_status(device, api.event_destroy(nullptr), OAR_STATUS_OK, "event_destroy(NULL)");
  expect_status(device, api.memory_free(device.handle(), nullptr), OAR_STATUS_OK,
                "memory_free(device, NULL)");
  expect_status(device, api.device_close(nullptr), OAR_STATUS_OK, "device_close(NULL)");
}

// Policy P20: the plugin writes only the caller's struct_size bytes and keeps
// struct_size; strings are NUL-terminated.
void properties_struct_size(TestContext& context) {
  Device& device = context.device;
  constexpr size_t kSlack = 64;
  std::vector<uint8_t> storage(sizeof(oar_device_properties_t) + kSlack, 0xCD);
  auto* properties = reinterpret_cast<oar_device_properties_t*>(storage.data());
  properties->struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  expect_status(device, device.api().device_properties(device.index(), properties), OAR_STATUS_OK,
                "device_properties");
  expect(properties->struct_size == OAR_DEVICE_PROPERTIES_STRUCT_SIZE,
         "device_properties changed the caller's struct_size to " +
             std::to_string(properties->struct_size));
  for (size_t i = OAR_DEVICE_PROPERTIES_STRUCT_SIZE; i < storage.size(); ++i) {
    expect(storage[i] == 0xCD, "device_properties wrote byte " + std::to_string(i) +
                                   ", beyond the caller's struct_size " +
                                   std::to_string(OAR_DEVICE_PROPERTIES_STRUCT_SIZE));
  }
  expect(std::memchr(properties->name, 0, sizeof properties->name) != nullptr,
         "name is not NUL-terminated");
  expect(std::memchr(properties->vendor, 0, sizeof properties->vendor) != nullptr,
         "vendor is not NUL-terminated");
  expect(std::memchr(properties->driver_version, 0, sizeof properties->driver_version) != nullptr,
         "driver_version is not NUL-terminated");
}

// Policy P6 and the capability fields: what the properties promise, the
// table must deliver.
void properties_match_slots(TestContext& context) {
  const Device& device = context.device;
  const oar_device_properties_t& p = device.properties();
  const oar_plugin_api_t& api = device.api();
  expect(p.memory_kinds & OAR_MEMORY_KIND_DEVICE, "memory_kinds must include DEVICE");
  expect(p.min_alignment != 0 && (p.min_alignment & (p.min_alignment - 1)) == 0,
         "min_alignment " + std::to_string(p.min_alignment) + " is not a power of two");
  expect(p.max_allocation_size > 0, "max_allocation_size is 0");
  struct Promise {
    bool promised;
    const void* slot;
    const char* what;
  };
  const Promise promises[] = {
      {device.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS),
       reinterpret_cast<const void*>(api.stream_add_host_callback),
       "HOST_CALLBACKS is listed but stream_add_host_callback is NULL"},
      {device.has_feature(OAR_DEVICE_FEATURE_TIMING_EVENTS),
       reinterpret_cast<const void*>(api.event_elapsed_ms),
       "TIMING_EVENTS is listed but event_elapsed_ms is NULL"},
      {device.has_feature(OAR_DEVICE_FEATURE_PEER_ACCESS),
       reinterpret_cast<const void*>(api.memory_copy_peer),
       "PEER_ACCESS is listed but memory_copy_peer is NULL"},
      {device.has_feature(OAR_DEVICE_FEATURE_COLLECTIVES),
       reinterpret_cast<const void*>(api.comm_create),
       "COLLECTIVES is listed but comm_create is NULL"},
      {(p.memory_kinds & (OAR_MEMORY_KIND_HOST_PINNED | OAR_MEMORY_KIND_UNIFIED)) != 0,
       reinterpret_cast<const void*>(api.memory_host_address),
       "a host-visible memory kind is listed but memory_host_address is NULL"},
  };
  for (const Promise& promise : promises) expect(!promise.promised || promise.slot, promise.what);
}

void memory_info(TestContext& context) {
  Device& device = context.device;
  if (device.api().device_memory_info == nullptr) skip("the plugin has no device_memory_info slot");
  MemoryInfo info = device.memory_info();
  expect(info.total > 0, "device_memory_info reports 0 bytes in total");
  expect(info.free <= info.total, "device_memory_info reports more free (" +
                                      std::to_string(info.free) + ") than total (" +
                                      std::to_string(info.total) + ") bytes");
  expect(info.total == device.properties().total_memory,
         "device_memory_info reports " + std::to_string(info.total) +
             " bytes in total, the device properties' total_memory " +
             std::to_string(device.properties().total_memory) + " (docs/abi.md: the same figure)");
}

// device_synchronize blocks until the work of every stream is done: three
// created streams and the default stream, each behind a gate. In each round
// every gate but one opens, and device_synchronize must still wait for the
// one held stream; the held stream changes from round to round, so a
// device_synchronize that waits for any proper subset of the streams fails.
void device_synchronize(TestContext& context) {
  Device& device = context.device;
  constexpr size_t kBytes = 1 << 20;
  constexpr size_t kCreated = 3;
  Buffer buffer = device.allocate_uncached(kBytes * (kCreated + 1));
  std::vector<uint8_t> result(kBytes * (kCreated + 1), 0);
  SynchronizeOnExit drain{device};
  std::vector<Stream> created;
  for (size_t i = 0; i < kCreated; ++i) created.push_back(device.create_stream());
  std::vector<Stream*> streams;
  for (Stream& s : created) streams.push_back(&s);
  streams.push_back(&device.default_stream());
  auto name = [&](size_t i) {
    return i < kCreated
               ? "stream " + std::to_string(i + 1) + " of " + std::to_string(kCreated) + " created"
               : std::string("the default stream");
  };
  const bool gated = has_callbacks(device);
  for (size_t held = 0; held < (gated ? streams.size() : 1); ++held) {
    std::fill(result.begin(), result.end(), 0);
    std::vector<std::unique_ptr<Gate>> gates;
    for (size_t i = 0; i < streams.size(); ++i) {
      if (gated) gates.push_back(std::make_unique<Gate>(*streams[i]));
      streams[i]->fill(buffer, kBytes * i, uint8_t(0x30 + 4 * held + i), kBytes);
      streams[i]->copy_to_host(result.data() + kBytes * i, buffer, kBytes * i, kBytes);
    }
    std::future<void> done = std::async(std::launch::async, [&] { device.synchronize(); });
    bool returned_early = false;
    if (gated) {
      for (size_t i = 0; i < gates.size(); ++i) {
        if (i != held) gates[i]->open();
      }
      gates[held]->expect_holding("work of " + name(held) + " behind a gate");
      returned_early = done.wait_for(30ms) != std::future_status::timeout;
      gates[held]->open();  // before any failure, or the pending synchronize never returns
    }
    done.get();
    expect(!returned_early, "device_synchronize returned while " + name(held) +
                                " was held by a host callback (the device's other streams had "
                                "been released): it must wait for every stream of the device");
    std::vector<uint8_t> want(result.size());
    for (size_t i = 0; i < streams.size(); ++i) {
      std::memset(want.data() + kBytes * i, int(0x30 + 4 * held + i), kBytes);
    }
    expect_bytes("host buffers after device_synchronize", result, want);
  }
}

}  // namespace

void register_lifecycle_tests(Registry& registry, const oar_device_properties_t&) {
  add(registry, "lifecycle", "many_streams_create_destroy_and_work", many_streams);
  add(registry, "lifecycle", "many_events_create_record_destroy", many_events);
  add(registry, "lifecycle", "stream_create_accepts_null_desc_and_every_priority",
      stream_descriptors);
  add(registry, "lifecycle", "releasing_null_is_a_noop", null_releases);
  add(registry, "lifecycle", "device_properties_honours_struct_size", properties_struct_size);
  add(registry, "lifecycle", "properties_promise_only_filled_slots", properties_match_slots);
  add(registry, "lifecycle", "memory_info_total_matches_properties_free_at_most_total",
      memory_info);
  add(registry, "lifecycle", "device_synchronize_waits_for_every_stream", device_synchronize);
}

}  // namespace oar::conformance::abi
