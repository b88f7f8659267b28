// Ordering: one stream runs in submission order, events order streams, host
// callbacks run after prior work, events complete only when their work has,
// timing events measure it. Work is held behind a host-callback gate where the
// device has host callbacks, so that a plugin that runs work early is caught.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "conformance/suites/abi/abi_util.h"

namespace oar::conformance::abi {
namespace {

using namespace std::chrono_literals;

bool has_callbacks(const Device& device) {
  return device.has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS);
}

// A gate when the device has host callbacks, nothing otherwise.
std::unique_ptr<Gate> maybe_gate(Stream& stream) {
  return has_callbacks(stream.device()) ? std::make_unique<Gate>(stream) : nullptr;
}

// fill, h2d, d2d, fill, d2h, d2h queued behind a gate: each step must see the
// one before it and nothing may run early.
void submission_order(TestContext& context) {
  Device& device = context.device;
  constexpr uint64_t kBytes = 1 << 20;
  constexpr uint64_t kOffset = 5;
  Stream stream = device.create_stream();
  Buffer a = device.allocate_uncached(kBytes);
  Buffer b = device.allocate_uncached(kBytes);
  std::vector<uint8_t> data = pattern(kBytes - 2 * kOffset, 1);
  std::vector<uint8_t> from_b(kBytes, 0), from_a(kBytes, 0);
  std::unique_ptr<Gate> gate = maybe_gate(stream);
  stream.fill(a, 0, 0x11, kBytes);
  stream.copy_from_host(a, kOffset, data.data(), data.size());  // must land after the fill
  stream.copy(b, 0, a, 0, kBytes);                              // must see fill + h2d
  stream.fill(a, 0, 0xEE, kBytes);                              // must not reach b
  stream.copy_to_host(from_b.data(), b, 0, kBytes);
  stream.copy_to_host(from_a.data(), a, 0, kBytes);
  if (gate) {
    std::this_thread::sleep_for(20ms);
    bool idle = stream.query();
    bool untouched = std::all_of(from_b.begin(), from_b.end(), [](uint8_t v) { return v == 0; }) &&
                     std::all_of(from_a.begin(), from_a.end(), [](uint8_t v) { return v == 0; });
    gate->release();
    stream.synchronize();
    expect(!idle, "stream_query said idle while the stream's work was held by a host callback");
    expect(untouched,
           "a d2h copy wrote the host buffer while earlier work on its stream was held: copies "
           "must wait for the work submitted before them");
  }
  stream.synchronize();
  std::vector<uint8_t> want_b(kBytes, 0x11);
  std::copy(data.begin(), data.end(), want_b.begin() + kOffset);
  expect_bytes("b = a after fill 0x11 and h2d at offset 5 (stream order)", from_b, want_b);
  expect_bytes("a after the last fill 0xEE", from_a, std::vector<uint8_t>(kBytes, 0xEE));
}

// Policy: an event completes only when the work before its record has.
void event_query_waits(TestContext& context) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Event event = device.create_event();
  Gate gate(stream);
  event.record(stream);
  bool done_at_once = true, done_later = true;
  expect_status(device, device.api().event_query(event.handle(), &done_at_once), OAR_STATUS_OK,
                "event_query");
  std::this_thread::sleep_for(30ms);
  expect_status(device, device.api().event_query(event.handle(), &done_later), OAR_STATUS_OK,
                "event_query");
  gate.release();
  event.synchronize();
  bool done_after = event.query();
  expect(!done_at_once && !done_later,
         "event_query reported the event complete while the work before its record was held");
  expect(done_after, "event_query reported the event incomplete after event_synchronize");
}

void unrecorded_event_complete(TestContext& context) {
  Device& device = context.device;
  Event event = device.create_event();
  bool done = false;
  expect_status(device, device.api().event_query(event.handle(), &done), OAR_STATUS_OK,
                "event_query of a never recorded event");
  expect(done, "an event never recorded must count as complete (policy P15)");
  expect_status(device, device.api().event_synchronize(event.handle()), OAR_STATUS_OK,
                "event_synchronize of a never recorded event");
}

void rerecord_moves_event(TestContext& context) {
  Device& device = context.device;
  Stream stream = device.create_stream();
  Event event = device.create_event();
  event.record(stream);
  stream.synchronize();
  expect(event.query(), "event not complete after stream_synchronize");
  Gate gate(stream);
  event.record(stream);
  bool done = event.query();
  gate.release();
  event.synchronize();
  expect(!done, "after recording again behind held work, query must refer to the latest record");
  expect(event.query(), "event not complete after event_synchronize");
}

// A consumer stream waits for the producer's event before its own work.
void cross_stream_wait(TestContext& context) {
  Device& device = context.device;
  constexpr uint64_t kBytes = 1 << 20;
  Stream producer = device.create_stream();
  Stream consumer = device.create_stream();
  Buffer data = device.allocate_uncached(kBytes);
  consumer.fill(data, 0, 0x01, kBytes);
  consumer.synchronize();
  Event ready = device.create_event();
  std::vector<uint8_t> result(kBytes, 0);
  std::unique_ptr<Gate> gate = maybe_gate(producer);
  producer.fill(data, 0, 0x42, kBytes);
  ready.record(producer);
  consumer.wait(ready);
  consumer.copy_to_host(result.data(), data, 0, kBytes);
  if (gate) {
    std::this_thread::sleep_for(30ms);
    bool consumer_idle = consumer.query();
    gate->release();
    consumer.synchronize();
    expect(!consumer_idle, "the consumer stream finished before the event it waits on completed");
  }
  consumer.synchronize();
  expect_bytes("consumer's d2h after waiting on the producer's fill", result,
               std::vector<uint8_t>(kBytes, 0x42));
}

void destroy_event_after_wait(TestContext& context) {
  Device& device = context.device;
  Stream producer = device.create_stream();
  Stream consumer = device.create_stream();
  Buffer data = device.allocate_uncached(4096);
  std::vector<uint8_t> result(4096, 0);
  std::unique_ptr<Gate> gate = maybe_gate(producer);
  producer.fill(data, 0, 0x5C, 4096);
  {
    Event ready = device.create_event();
    ready.record(producer);
    consumer.wait(ready);
  }  // destroyed right after the wait, as the ABI allows
  consumer.copy_to_host(result.data(), data, 0, 4096);
  if (gate) gate->release();
  consumer.synchronize();
  producer.synchronize();
  expect_bytes("d2h ordered by an event destroyed right after stream_wait_event", result,
               std::vector<uint8_t>(4096, 0x5C));
}

void callback_after_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  constexpr uint64_t kBytes = 1 << 20;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBytes);
  std::vector<uint8_t> result(kBytes, 0);
  auto calls = std::make_shared<std::atomic<int>>(0);
  auto seen = std::make_shared<std::atomic<int>>(-1);
  auto status = std::make_shared<std::atomic<oar_status_t>>(-1);
  stream.fill(buffer, 0, 0x7F, kBytes);
  stream.copy_to_host(result.data(), buffer, 0, kBytes);
  uint8_t* last = &result.back();
  stream.add_callback([=](oar_status_t s) {
    *seen = *last;
    *status = s;
    ++*calls;
  });
  stream.synchronize();
  std::this_thread::sleep_for(20ms);  // a second call would come now
  expect(calls->load() == 1, "the host callback ran " + std::to_string(calls->load()) +
                                 " times; it must run exactly once (policy P24)");
  expect(seen->load() == 0x7F, "the host callback ran before the d2h copy submitted before it");
  expect(status->load() == OAR_STATUS_OK, "the host callback got a status other than OK");
}

void callbacks_in_order(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  Stream stream = device.create_stream();
  auto order = std::make_shared<std::vector<int>>();
  auto mutex = std::make_shared<std::mutex>();
  for (int i = 0; i < 16; ++i) {
    stream.add_callback([=](oar_status_t) {
      std::lock_guard<std::mutex> lock(*mutex);
      order->push_back(i);
    });
  }
  stream.synchronize();
  std::lock_guard<std::mutex> lock(*mutex);
  std::vector<int> want(16);
  for (int i = 0; i < 16; ++i) want[size_t(i)] = i;
  expect(*order == want, "16 host callbacks on one stream did not run once each in order");
}

void elapsed_covers_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_TIMING_EVENTS);
  Stream stream = device.create_stream();
  Event start = device.create_event(OAR_EVENT_FLAG_TIMING);
  Event end = device.create_event(OAR_EVENT_FLAG_TIMING);
  start.record(stream);
  const bool sleeps = has_callbacks(device);
  if (sleeps) stream.add_callback([](oar_status_t) { std::this_thread::sleep_for(30ms); });
  end.record(stream);
  end.synchronize();
  float ms = end.elapsed_ms_since(start);
  expect(ms >= (sleeps ? 25.0f : 0.0f) && ms < 60000.0f,
         "elapsed time " + std::to_string(ms) + " ms does not cover " +
             (sleeps ? "a 30 ms host callback" : "the work") + " between the events");
  float back = start.elapsed_ms_since(start);
  expect(back >= 0 && back < 1.0f,
         "elapsed time from an event to itself is " + std::to_string(back) + " ms, expected 0");
}

}  // namespace

void register_ordering_tests(Registry& registry, const oar_device_properties_t&) {
  add(registry, "streams", "work_runs_in_submission_order_behind_a_gate", submission_order);
  add(registry, "events", "query_false_until_held_work_completes", event_query_waits);
  add(registry, "events", "never_recorded_event_is_complete", unrecorded_event_complete);
  add(registry, "events", "recording_again_moves_the_event", rerecord_moves_event);
  add(registry, "events", "stream_waits_for_event_of_another_stream", cross_stream_wait);
  add(registry, "events", "event_may_be_destroyed_right_after_wait", destroy_event_after_wait);
  add(registry, "callbacks", "run_once_after_prior_work_with_ok", callback_after_work);
  add(registry, "callbacks", "run_in_submission_order", callbacks_in_order);
  add(registry, "timing", "elapsed_ms_covers_the_work_between_events", elapsed_covers_work);
}

}  // namespace oar::conformance::abi
