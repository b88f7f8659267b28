// Ordering: one stream runs in submission order, events order streams, host
// callbacks run after prior work, events complete exactly when the work
// before their record has, stream_query and stream_destroy see pending work,
// timing events measure it. Where the device has host callbacks, work is held
// behind a gate (so that work run early shows) and timed by probes, host
// callbacks whose end is the ground truth of "the work before me is done".
// Every wait is bounded (kWaitLimit) and says what it waited for.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "conformance/suites/abi/abi_util.h"

namespace oar::conformance::abi {
namespace {

using namespace std::chrono_literals;

// A gate when the device has host callbacks, nothing otherwise.
std::unique_ptr<Gate> maybe_gate(Stream& stream) {
  return has_callbacks(stream.device()) ? std::make_unique<Gate>(stream) : nullptr;
}

std::unique_ptr<Probe> maybe_probe(Stream& stream, std::chrono::milliseconds hold) {
  return has_callbacks(stream.device()) ? std::make_unique<Probe>(stream, hold) : nullptr;
}

std::string ms_text(std::chrono::milliseconds ms) { return std::to_string(ms.count()) + " ms"; }

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
  SynchronizeOnExit drain{device};
  std::unique_ptr<Gate> gate = maybe_gate(stream);
  stream.fill(a, 0, 0x11, kBytes);
  stream.copy_from_host(a, kOffset, data.data(), data.size());  // must land after the fill
  stream.copy(b, 0, a, 0, kBytes);                              // must see fill + h2d
  stream.fill(a, 0, 0xEE, kBytes);                              // must not reach b
  stream.copy_to_host(from_b.data(), b, 0, kBytes);
  stream.copy_to_host(from_a.data(), a, 0, kBytes);
  if (gate) {
    gate->expect_holding("work queued behind a gate");
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

// stream_query is false while work is pending (a probe still sleeping), and
// becomes true on its own once the work is done, without a synchronize.
void query_pending_then_idle(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(4096);
  SynchronizeOnExit drain{device};
  Probe probe(stream, 50ms);
  stream.fill(buffer, 0, 0x21, 4096);
  bool idle = stream.query();
  bool probe_done = probe.finished();  // read after the query: a true idle implies it
  expect(!idle || probe_done,
         "stream_query reported the stream idle while a 50 ms host callback on it was still "
         "running (and a fill waited behind it)");
  probe.wait_finished("queued on an idle stream");
  expect(wait_until([&] { return stream.query(); }),
         "stream_query still reported work pending " + std::to_string(kWaitLimit.count()) +
             " s after the stream's last work (a 4 KiB fill behind a host callback) could run; "
             "a stream must become idle without a synchronize");
}

// stream_destroy with work still queued: the work runs (docs/abi.md: destroy
// waits for pending work), events recorded on the stream stay valid. Work is
// queued on both sides of the record, so that a plugin that submits batches
// at sync points (a record is one) must not drop the last batch either.
// Called through the slots: the C++ Stream synchronizes before it destroys.
void destroy_completes_pending_work(TestContext& context) {
  Device& device = context.device;
  const oar_plugin_api_t& api = device.api();
  constexpr uint64_t kBytes = 2 << 20;
  Buffer buffer = device.allocate_uncached(2 * kBytes);
  GuardedHost before_record(kBytes, 0), after_record(kBytes, 0);
  Event event = device.create_event();
  oar_stream_t stream = nullptr;
  expect_status(device, api.stream_create(device.handle(), nullptr, &stream), OAR_STATUS_OK,
                "stream_create");
  std::unique_ptr<Probe> probe;
  try {
    if (has_callbacks(device)) probe = std::make_unique<Probe>(device, stream, 50ms);
    auto queue = [&](uint64_t offset, uint8_t value, GuardedHost& host) {
      expect_status(device, api.memory_fill(stream, buffer.memory(), offset, value, kBytes),
                    OAR_STATUS_OK, "memory_fill");
      expect_status(device,
                    api.memory_copy_d2h(stream, host.data(), buffer.memory(), offset, kBytes),
                    OAR_STATUS_OK, "memory_copy_d2h");
    };
    queue(0, 0x6D, before_record);
    expect_status(device, api.event_record(event.handle(), stream), OAR_STATUS_OK, "event_record");
    queue(kBytes, 0x2E, after_record);
  } catch (...) {
    api.stream_destroy(stream);
    throw;
  }
  expect_status(device, api.stream_destroy(stream), OAR_STATUS_OK,
                "stream_destroy with work pending");
  if (probe) {
    expect(probe->finished(),
           "stream_destroy returned before a host callback queued on the stream had run: it must "
           "wait for the stream's pending work");
  }
  before_record.expect_guards("a d2h copy pending at stream_destroy");
  after_record.expect_guards("a d2h copy pending at stream_destroy");
  expect_bytes(
      "a fill and d2h queued before an event record, pending when stream_destroy was "
      "called (the work must run, not be dropped)",
      before_record.contents(), std::vector<uint8_t>(kBytes, 0x6D));
  expect_bytes(
      "a fill and d2h queued last, pending when stream_destroy was called (the work "
      "must run, not be dropped)",
      after_record.contents(), std::vector<uint8_t>(kBytes, 0x2E));
  bool done = false;
  expect_status(device, api.event_query(event.handle(), &done), OAR_STATUS_OK,
                "event_query of an event recorded on a destroyed stream");
  expect(done, "an event recorded on a stream before stream_destroy is not complete after it");
  expect_status(device, api.event_synchronize(event.handle()), OAR_STATUS_OK,
                "event_synchronize of an event recorded on a destroyed stream");
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
  gate.expect_holding("an event recorded behind a gate");
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

// An event covers the work right before its record: a 30 ms probe queued just
// before it must have finished when event_synchronize returns, when
// event_query says done, and when a stream waiting on the event goes on.
void event_covers_last_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  Stream stream = device.create_stream();
  Stream consumer = device.create_stream();
  Event event = device.create_event();
  Probe last(stream, 30ms);
  event.record(stream);
  consumer.wait(event);
  Probe after_wait(consumer);
  bool done_early = event.query();
  bool last_done = last.finished();  // read after the query
  expect(!done_early || last_done,
         "event_query reported an event complete while the host callback submitted just before "
         "its record was still running");
  event.synchronize();
  expect(last.finished(),
         "event_synchronize returned before the host callback submitted just before the record "
         "had finished: the event must capture all work before event_record");
  after_wait.wait_finished("queued on a stream after stream_wait_event");
  expect(after_wait.started_at() >= last.finished_at(),
         "work queued after stream_wait_event ran before the work before the event's record had "
         "finished");
  consumer.synchronize();
  stream.synchronize();
}

// An event captures the point of its record, not the end of the stream: it
// completes while work submitted after the record is still held.
void event_ignores_later_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  constexpr uint64_t kBytes = 1 << 20;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBytes);
  std::vector<uint8_t> result(kBytes, 0);
  SynchronizeOnExit drain{device};
  Event event = device.create_event();
  stream.fill(buffer, 0, 0x4B, kBytes);
  stream.copy_to_host(result.data(), buffer, 0, kBytes);
  event.record(stream);
  Gate gate(stream);
  stream.fill(buffer, 0, 0xB4, kBytes);  // after the record, held
  const bool done = wait_until([&] { return event.query(); }, 5s);
  const bool query_blocked = gate.expired();
  bool sync_blocked = false;
  if (done && !query_blocked) {
    event.synchronize();
    sync_blocked = gate.expired();
  }
  gate.open();
  stream.synchronize();
  expect(!query_blocked,
         "event_query blocked until work submitted after the event's record could run");
  expect(done,
         "event_query still reported an event incomplete 5 s after the work before its record "
         "could complete, while only work submitted after the record was held: the event must "
         "capture the point of its record, not the end of the stream");
  expect(!sync_blocked,
         "event_synchronize waited for work submitted after the event's record (it returned only "
         "when the gate holding that work gave up)");
  expect_bytes("d2h before the event's record", result, std::vector<uint8_t>(kBytes, 0x4B));
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
  SynchronizeOnExit drain{device};
  std::unique_ptr<Gate> gate = maybe_gate(producer);
  std::unique_ptr<Probe> produced = maybe_probe(producer, 20ms);
  producer.fill(data, 0, 0x42, kBytes);
  ready.record(producer);
  consumer.wait(ready);
  consumer.copy_to_host(result.data(), data, 0, kBytes);
  std::unique_ptr<Probe> consumed = maybe_probe(consumer, 0ms);
  if (gate) {
    gate->expect_holding("the producer's work behind a gate");
    std::this_thread::sleep_for(30ms);
    bool consumer_idle = consumer.query();
    bool consumer_ran = consumed->started();
    gate->release();
    consumer.synchronize();
    expect(!consumer_idle && !consumer_ran,
           "the consumer stream finished before the event it waits on completed: "
           "stream_wait_event must hold later work on the consumer");
    expect(consumed->started_at() >= produced->finished_at(),
           "work queued on the consumer after stream_wait_event ran before the producer's work "
           "before the event had finished");
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
  SynchronizeOnExit drain{device};
  consumer.fill(data, 0, 0x01, 4096);
  consumer.synchronize();
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

// A callback on an idle stream runs on its own (no synchronize), on a plugin
// thread (an inline call fails in Probe's constructor), once, with OK.
void callback_runs_unprompted(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  Stream stream = device.create_stream();
  Probe probe(stream);
  probe.wait_finished("queued on an idle stream (nothing synchronized it)");
  stream.synchronize();
  std::this_thread::sleep_for(20ms);  // a second call would come now
  expect(probe.calls() == 1, "the host callback ran " + std::to_string(probe.calls()) +
                                 " times; it must run exactly once (policy P24)");
  expect(probe.status() == OAR_STATUS_OK, "the host callback of a healthy stream got status " +
                                              std::string(status_name(probe.status())));
}

// A callback behind held work does not run until that work is done, and then
// runs without a synchronize.
void callback_held_by_earlier_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  Stream stream = device.create_stream();
  Gate gate(stream);
  Probe probe(stream);
  gate.expect_holding("a host callback behind a gate");
  std::this_thread::sleep_for(20ms);
  const bool early = probe.started();
  gate.release();
  expect(!early,
         "a host callback ran while the work submitted before it (another host callback) was "
         "still running");
  probe.wait_finished("queued behind a released gate");
  expect(probe.started_at() >= gate.finished_at(),
         "a host callback started before the work submitted before it had finished");
  stream.synchronize();
  std::this_thread::sleep_for(20ms);
  expect(probe.calls() == 1 && gate.calls() == 1,
         "host callbacks ran " + std::to_string(gate.calls()) + " and " +
             std::to_string(probe.calls()) + " times; each must run exactly once (policy P24)");
}

void callback_after_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  constexpr uint64_t kBytes = 1 << 20;
  Stream stream = device.create_stream();
  Buffer buffer = device.allocate_uncached(kBytes);
  // Shared: the callback may run after this test if the plugin runs it late.
  auto result = std::make_shared<std::vector<uint8_t>>(kBytes, 0);
  auto seen = std::make_shared<std::atomic<int>>(-1);
  SynchronizeOnExit drain{device};
  stream.fill(buffer, 0, 0x7F, kBytes);
  stream.copy_to_host(result->data(), buffer, 0, kBytes);
  Probe probe(stream, 0ms, [result, seen](oar_status_t) { *seen = result->back(); });
  stream.synchronize();
  expect(probe.finished(),
         "stream_synchronize returned before the host callback submitted before it had finished");
  std::this_thread::sleep_for(20ms);  // a second call would come now
  expect(probe.calls() == 1, "the host callback ran " + std::to_string(probe.calls()) +
                                 " times; it must run exactly once (policy P24)");
  expect(seen->load() == 0x7F, "the host callback ran before the d2h copy submitted before it");
  expect(probe.status() == OAR_STATUS_OK, "the host callback got a status other than OK");
}

void callbacks_in_order(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_HOST_CALLBACKS);
  constexpr int kCount = 16;
  Stream stream = device.create_stream();
  auto order = std::make_shared<std::vector<int>>();
  auto mutex = std::make_shared<std::mutex>();
  std::vector<std::unique_ptr<Probe>> probes;
  for (int i = 0; i < kCount; ++i) {
    probes.push_back(std::make_unique<Probe>(stream, 0ms, [=](oar_status_t) {
      std::lock_guard<std::mutex> lock(*mutex);
      order->push_back(i);
    }));
  }
  for (int i = 0; i < kCount; ++i) {
    probes[size_t(i)]->wait_finished(std::to_string(i + 1) + " of " + std::to_string(kCount) +
                                     " queued on one stream");
  }
  stream.synchronize();
  std::this_thread::sleep_for(20ms);
  std::lock_guard<std::mutex> lock(*mutex);
  std::vector<int> want(kCount);
  for (int i = 0; i < kCount; ++i) want[size_t(i)] = i;
  std::string got;
  for (int i : *order) got += (got.empty() ? "" : " ") + std::to_string(i);
  expect(*order == want, std::to_string(kCount) +
                             " host callbacks on one stream did not run once each in order: "
                             "they ran as " +
                             got);
}

void elapsed_covers_work(TestContext& context) {
  Device& device = context.device;
  require_feature(device, OAR_DEVICE_FEATURE_TIMING_EVENTS);
  Stream stream = device.create_stream();
  Event start = device.create_event(OAR_EVENT_FLAG_TIMING);
  Event end = device.create_event(OAR_EVENT_FLAG_TIMING);
  start.record(stream);
  std::unique_ptr<Probe> sleeper = maybe_probe(stream, 30ms);
  end.record(stream);
  end.synchronize();
  float ms = end.elapsed_ms_since(start);
  expect(ms >= (sleeper ? 25.0f : 0.0f) && ms < 60000.0f,
         "elapsed time " + std::to_string(ms) + " ms does not cover " +
             (sleeper ? "a " + ms_text(30ms) + " host callback" : std::string("the work")) +
             " between the events");
  float back = start.elapsed_ms_since(start);
  expect(back >= 0 && back < 1.0f,
         "elapsed time from an event to itself is " + std::to_string(back) + " ms, expected 0");
}

}  // namespace

void register_ordering_tests(Registry& registry, const oar_device_properties_t&) {
  add(registry, "streams", "work_runs_in_submission_order_behind_a_gate", submission_order);
  add(registry, "streams", "query_reports_pending_work_then_idle", query_pending_then_idle);
  add(registry, "streams", "destroy_runs_pending_work_and_keeps_its_events",
      destroy_completes_pending_work);
  add(registry, "events", "query_false_until_held_work_completes", event_query_waits);
  add(registry, "events", "cover_the_work_just_before_the_record", event_covers_last_work);
  add(registry, "events", "complete_while_later_work_is_held", event_ignores_later_work);
  add(registry, "events", "never_recorded_event_is_complete", unrecorded_event_complete);
  add(registry, "events", "recording_again_moves_the_event", rerecord_moves_event);
  add(registry, "events", "stream_waits_for_event_of_another_stream", cross_stream_wait);
  add(registry, "events", "event_may_be_destroyed_right_after_wait", destroy_event_after_wait);
  add(registry, "callbacks", "run_unprompted_on_a_plugin_thread_once", callback_runs_unprompted);
  add(registry, "callbacks", "held_back_by_earlier_work", callback_held_by_earlier_work);
  add(registry, "callbacks", "run_once_after_prior_work_with_ok", callback_after_work);
  add(registry, "callbacks", "run_in_submission_order", callbacks_in_order);
  add(registry, "timing", "elapsed_ms_covers_the_work_between_events", elapsed_covers_work);
}

}  // namespace oar::conformance::abi
