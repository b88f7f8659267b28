// Stream ordering, cross-stream events, host callbacks, timing, misuse.
#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "cpu_fixture.h"

namespace oar::testing {
namespace {

using namespace std::chrono_literals;
using StreamEventTest = CpuTest;

TEST_F(StreamEventTest, WorkOnOneStreamRunsInSubmissionOrder) {
  Stream stream = device().create_stream();
  Buffer a = device().allocate(1024, &stream);
  Buffer b = device().allocate(1024, &stream);
  std::vector<uint8_t> first = pattern(1024, 3);
  std::vector<uint8_t> result(1024);
  std::promise<void> gate = block(stream);
  stream.copy_from_host(a, 0, first.data(), 1024);
  stream.copy(b, 0, a, 0, 1024);  // must see |first|
  stream.fill(a, 0, 0xEE, 1024);  // must not reach b
  stream.copy_to_host(result.data(), b, 0, 1024);
  EXPECT_FALSE(stream.query()) << "work ran although the stream was held";
  gate.set_value();
  stream.synchronize();
  EXPECT_TRUE(stream.query());
  EXPECT_EQ(result, first);
}

TEST_F(StreamEventTest, StreamWaitsForAnEventOfAnotherStream) {
  Stream producer = device().create_stream();
  Stream consumer = device().create_stream();
  Buffer data = device().allocate(4096, &producer);
  Event ready = device().create_event();
  std::vector<uint8_t> result(4096, 0);

  std::promise<void> gate = block(producer);
  producer.fill(data, 0, 0x42, 4096);
  ready.record(producer);
  consumer.wait(ready);
  consumer.copy_to_host(result.data(), data, 0, 4096);

  std::this_thread::sleep_for(50ms);
  EXPECT_FALSE(consumer.query()) << "the consumer ran before the event completed";
  EXPECT_FALSE(ready.query());
  gate.set_value();
  consumer.synchronize();
  EXPECT_TRUE(ready.query());
  EXPECT_EQ(result, std::vector<uint8_t>(4096, 0x42));
}

TEST_F(StreamEventTest, HostCallbackRunsAfterAllPriorWork) {
  Stream stream = device().create_stream();
  Buffer buffer = device().allocate(1 << 20, &stream);
  std::vector<uint8_t> result(1 << 20, 0);
  std::atomic<int> seen{-1};
  std::atomic<oar_status_t> status{-1};
  stream.fill(buffer, 0, 0x7F, 1 << 20);
  stream.copy_to_host(result.data(), buffer, 0, 1 << 20);
  stream.add_callback([&](oar_status_t s) {
    seen = result.back();
    status = s;
  });
  stream.synchronize();
  EXPECT_EQ(seen.load(), 0x7F);
  EXPECT_EQ(status.load(), OAR_STATUS_OK);
}

TEST_F(StreamEventTest, TimingEventsMeasureTheWorkBetweenThem) {
  ASSERT_TRUE(device().has_feature(OAR_DEVICE_FEATURE_TIMING_EVENTS));
  Stream stream = device().create_stream();
  Event start = device().create_event(OAR_EVENT_FLAG_TIMING);
  Event end = device().create_event(OAR_EVENT_FLAG_TIMING);
  start.record(stream);
  stream.add_callback([](oar_status_t) { std::this_thread::sleep_for(30ms); });
  end.record(stream);
  end.synchronize();
  float ms = end.elapsed_ms_since(start);
  EXPECT_GE(ms, 29.0f);
  EXPECT_LT(ms, 10000.0f);
}

TEST_F(StreamEventTest, RecordingAgainMovesTheEvent) {
  Stream stream = device().create_stream();
  Event event = device().create_event();
  event.record(stream);
  stream.synchronize();
  EXPECT_TRUE(event.query());
  std::promise<void> gate = block(stream);
  event.record(stream);
  EXPECT_FALSE(event.query()) << "query must refer to the latest record";
  gate.set_value();
  event.synchronize();
  EXPECT_TRUE(event.query());
}

TEST_F(StreamEventTest, EventNeverRecordedIsComplete) {
  Event event = device().create_event();
  EXPECT_TRUE(event.query());
  event.synchronize();
}

TEST_F(StreamEventTest, WaitingOnAnEventNeverRecordedIsAFailedPrecondition) {
  Stream stream = device().create_stream();
  Event event = device().create_event();
  std::string message = error_of(OAR_STATUS_FAILED_PRECONDITION, [&] { stream.wait(event); });
  EXPECT_NE(message.find("[cpu]"), std::string::npos) << "the plugin is named: " << message;
}

TEST_F(StreamEventTest, ElapsedTimeNeedsTimingEvents) {
  Stream stream = device().create_stream();
  Event start = device().create_event();
  Event end = device().create_event();
  start.record(stream);
  end.record(stream);
  stream.synchronize();
  error_of(OAR_STATUS_FAILED_PRECONDITION, [&] { end.elapsed_ms_since(start); });
}

TEST_F(StreamEventTest, ElapsedTimeBeforeRecordingIsAFailedPrecondition) {
  Event start = device().create_event(OAR_EVENT_FLAG_TIMING);
  Event end = device().create_event(OAR_EVENT_FLAG_TIMING);
  error_of(OAR_STATUS_FAILED_PRECONDITION, [&] { end.elapsed_ms_since(start); });
}

TEST_F(StreamEventTest, UnknownEventFlagsAreRefusedByThePlugin) {
  oar_event_t event = nullptr;
  EXPECT_EQ(device().api().event_create(device().handle(), 1u << 30, &event),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(event, nullptr) << "out-params stay unchanged on failure";
}

TEST_F(StreamEventTest, StreamsWorkConcurrently) {
  // Two streams each blocked on their own gate: releasing the second first
  // must let it finish while the first is still held.
  Stream first = device().create_stream();
  Stream second = device().create_stream();
  std::promise<void> gate1 = block(first);
  std::promise<void> gate2 = block(second);
  gate2.set_value();
  second.synchronize();
  EXPECT_FALSE(first.query());
  gate1.set_value();
  first.synchronize();
}

TEST_F(StreamEventTest, DeviceSynchronizeWaitsForEveryStream) {
  Stream a = device().create_stream();
  Stream b = device().create_stream();
  std::atomic<int> done{0};
  for (Stream* s : {&a, &b}) {
    s->add_callback([&](oar_status_t) {
      std::this_thread::sleep_for(20ms);
      ++done;
    });
  }
  device().synchronize();
  EXPECT_EQ(done.load(), 2);
}

TEST_F(StreamEventTest, StreamsOfManyThreadsRunAllTheirCallbacks) {
  // Streams are thread-compatible: one stream per thread, all at once.
  std::atomic<int> count{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      Stream stream = device().create_stream();
      for (int i = 0; i < 250; ++i) stream.add_callback([&](oar_status_t) { ++count; });
      stream.synchronize();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(count.load(), 1000);
}

}  // namespace
}  // namespace oar::testing
