// Tests of QueueStreams: the stream and event slots every host-driven plugin
// built on the SDK gets (cpu, sim, samples/vendor_plugin). Each test states
// one rule of oar/stream.h or oar/event.h. As in work_queue_test.cc, nothing
// asserts durations; busy streams wait on a Gate the test opens.
#include "oar/sdk/queue_streams.hpp"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "oar/sdk/plugin.hpp"

struct oar_device_s {
  int index = 0;
};

namespace oar::sdk {
namespace {

class Gate {
 public:
  void wait() const { opened_.wait(); }
  void open() { promise_.set_value(); }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
};

class Streams : public QueueStreams {
 public:
  Streams() : QueueStreams("sdk-test-s") {}
};

// Runs |body| and returns the status a slot would return.
template <typename Body>
oar_status_t status_of(Body&& body) {
  try {
    body();
    return OAR_STATUS_OK;
  } catch (const Error& e) {
    return e.code();
  }
}

class SdkQueueStreamsTest : public ::testing::Test {
 protected:
  oar_stream_t make_stream(oar_device_t device = nullptr) {
    oar_stream_t stream = nullptr;
    streams_.stream_create(device != nullptr ? device : &device_, nullptr, &stream);
    return stream;
  }
  oar_event_t make_event(uint32_t flags = 0) {
    oar_event_t event = nullptr;
    streams_.event_create(&device_, flags, &event);
    return event;
  }
  void fail(oar_stream_t stream, oar_status_t code = OAR_STATUS_DATA_LOSS) {
    QueueStreams::submit(stream, [code] { throw Error(code, "injected"); });
  }

  oar_device_s device_;
  Streams streams_;
};

TEST_F(SdkQueueStreamsTest, EveryStreamAndEventSlotIsAMemberTheSdkFinds) {
  // A plugin class deriving from QueueStreams fills these slots through
  // OAR_PLUGIN_DEFINE: the detection must see inherited members.
  EXPECT_TRUE(detail::has_device_synchronize<Streams>::value);
  EXPECT_TRUE(detail::has_stream_create<Streams>::value);
  EXPECT_TRUE(detail::has_stream_wait_event<Streams>::value);
  EXPECT_TRUE(detail::has_stream_add_host_callback<Streams>::value);
  EXPECT_TRUE(detail::has_event_record<Streams>::value);
  EXPECT_TRUE(detail::has_event_elapsed_ms<Streams>::value);
  EXPECT_FALSE(detail::has_memory_allocate<Streams>::value);
}

TEST_F(SdkQueueStreamsTest, WorkOnOneStreamRunsInSubmissionOrder) {
  oar_stream_t stream = make_stream();
  std::vector<int> order;
  for (int i = 0; i < 50; ++i) QueueStreams::submit(stream, [&order, i] { order.push_back(i); });
  streams_.stream_synchronize(stream);
  ASSERT_EQ(order.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ(order[i], i);
  streams_.stream_destroy(stream);
}

TEST_F(SdkQueueStreamsTest, AnEventOrdersWorkAcrossStreamsWithoutBlockingTheHost) {
  oar_stream_t first = make_stream();
  oar_stream_t second = make_stream();
  oar_event_t event = make_event();
  Gate gate;
  std::atomic<bool> first_done{false};
  std::atomic<bool> second_saw_first{false};
  QueueStreams::submit(first, [&] {
    gate.wait();
    first_done = true;
  });
  streams_.event_record(event, first);
  streams_.stream_wait_event(second, event);  // returns at once
  QueueStreams::submit(second, [&] { second_saw_first = first_done.load(); });
  bool idle = true;
  streams_.stream_query(second, &idle);
  EXPECT_FALSE(idle);
  gate.open();
  streams_.stream_synchronize(second);
  EXPECT_TRUE(second_saw_first);
  streams_.event_destroy(event);
  streams_.stream_destroy(first);
  streams_.stream_destroy(second);
}

TEST_F(SdkQueueStreamsTest, AFailedStreamReportsItsFirstErrorAndSkipsLaterWork) {
  oar_stream_t stream = make_stream();
  bool later_ran = false;
  fail(stream, OAR_STATUS_DATA_LOSS);
  fail(stream, OAR_STATUS_INTERNAL);
  QueueStreams::submit(stream, [&] { later_ran = true; });
  EXPECT_EQ(status_of([&] { streams_.stream_synchronize(stream); }), OAR_STATUS_DATA_LOSS);
  bool idle = false;
  EXPECT_EQ(status_of([&] { streams_.stream_query(stream, &idle); }), OAR_STATUS_DATA_LOSS);
  EXPECT_FALSE(later_ran);
  // Destroying a failed stream drops the error.
  EXPECT_EQ(status_of([&] { streams_.stream_destroy(stream); }), OAR_STATUS_OK);
}

TEST_F(SdkQueueStreamsTest, EventsRecordedAfterAFailureCarryItAndEarlierOnesDoNot) {
  oar_stream_t stream = make_stream();
  oar_event_t before = make_event();
  oar_event_t after = make_event();
  streams_.event_record(before, stream);
  fail(stream);
  streams_.event_record(after, stream);
  EXPECT_EQ(status_of([&] { streams_.event_synchronize(before); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { streams_.event_synchronize(after); }), OAR_STATUS_DATA_LOSS);
  bool done = false;
  EXPECT_EQ(status_of([&] { streams_.event_query(after, &done); }), OAR_STATUS_DATA_LOSS);
  streams_.event_destroy(before);
  streams_.event_destroy(after);
  streams_.stream_destroy(stream);
}

TEST_F(SdkQueueStreamsTest, WaitingOnAnEventOfAFailedStreamFailsTheWaitingStream) {
  oar_stream_t failed = make_stream();
  oar_stream_t waiting = make_stream();
  oar_event_t event = make_event();
  bool after_wait_ran = false;
  fail(failed, OAR_STATUS_ABORTED);
  streams_.event_record(event, failed);
  streams_.stream_wait_event(waiting, event);
  QueueStreams::submit(waiting, [&] { after_wait_ran = true; });
  EXPECT_EQ(status_of([&] { streams_.stream_synchronize(waiting); }), OAR_STATUS_ABORTED);
  EXPECT_FALSE(after_wait_ran);
  streams_.event_destroy(event);
  streams_.stream_destroy(failed);
  streams_.stream_destroy(waiting);
}

TEST_F(SdkQueueStreamsTest, HostCallbacksRunOnceInOrderWithTheStreamStatus) {
  oar_stream_t stream = make_stream();
  struct Calls {
    std::vector<oar_status_t> statuses;
  } calls;
  auto callback = [](void* user_data, oar_status_t status) {
    static_cast<Calls*>(user_data)->statuses.push_back(status);
  };
  streams_.stream_add_host_callback(stream, callback, &calls);
  fail(stream, OAR_STATUS_UNAVAILABLE);
  streams_.stream_add_host_callback(stream, callback, &calls);
  EXPECT_EQ(status_of([&] { streams_.stream_synchronize(stream); }), OAR_STATUS_UNAVAILABLE);
  ASSERT_EQ(calls.statuses.size(), 2u);
  EXPECT_EQ(calls.statuses[0], OAR_STATUS_OK);
  EXPECT_EQ(calls.statuses[1], OAR_STATUS_UNAVAILABLE);
  EXPECT_EQ(status_of([&] { streams_.stream_add_host_callback(stream, nullptr, nullptr); }),
            OAR_STATUS_INVALID_ARGUMENT);
  streams_.stream_destroy(stream);
}

TEST_F(SdkQueueStreamsTest, DeviceSynchronizeWaitsForEveryStreamThenReturnsTheFirstError) {
  oar_stream_t healthy = make_stream();
  oar_stream_t failed = make_stream();
  Gate gate;
  std::atomic<bool> healthy_done{false};
  QueueStreams::submit(healthy, [&] {
    gate.wait();
    healthy_done = true;
  });
  fail(failed, OAR_STATUS_RESOURCE_EXHAUSTED);
  std::thread opener([&] { gate.open(); });
  EXPECT_EQ(status_of([&] { streams_.device_synchronize(&device_); }),
            OAR_STATUS_RESOURCE_EXHAUSTED);
  EXPECT_TRUE(healthy_done);
  opener.join();
  streams_.stream_destroy(healthy);
  streams_.stream_destroy(failed);
}

TEST_F(SdkQueueStreamsTest, DeviceSynchronizeSeesOnlyItsOwnDevice) {
  oar_device_s other;
  oar_stream_t elsewhere = make_stream(&other);
  fail(elsewhere);
  EXPECT_EQ(status_of([&] { streams_.device_synchronize(&device_); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { streams_.device_synchronize(&other); }), OAR_STATUS_DATA_LOSS);
  streams_.stream_destroy(elsewhere);
}

TEST_F(SdkQueueStreamsTest, AnEventNeverRecordedIsCompleteButCannotBeWaitedOn) {
  oar_stream_t stream = make_stream();
  oar_event_t event = make_event();
  bool done = false;
  streams_.event_query(event, &done);
  EXPECT_TRUE(done);
  EXPECT_EQ(status_of([&] { streams_.event_synchronize(event); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { streams_.stream_wait_event(stream, event); }),
            OAR_STATUS_FAILED_PRECONDITION);
  streams_.event_destroy(event);
  streams_.stream_destroy(stream);
}

TEST_F(SdkQueueStreamsTest, ElapsedTimeNeedsTwoCompletedTimingEvents) {
  oar_stream_t stream = make_stream();
  oar_event_t start = make_event(OAR_EVENT_FLAG_TIMING);
  oar_event_t end = make_event(OAR_EVENT_FLAG_TIMING);
  oar_event_t plain = make_event();
  float ms = -1;
  EXPECT_EQ(status_of([&] { streams_.event_elapsed_ms(start, end, &ms); }),
            OAR_STATUS_FAILED_PRECONDITION);  // never recorded
  streams_.event_record(start, stream);
  QueueStreams::submit(stream, [] {});
  streams_.event_record(end, stream);
  streams_.stream_synchronize(stream);
  streams_.event_elapsed_ms(start, end, &ms);
  EXPECT_GE(ms, 0.0f);
  streams_.event_record(plain, stream);
  streams_.stream_synchronize(stream);
  EXPECT_EQ(status_of([&] { streams_.event_elapsed_ms(start, plain, &ms); }),
            OAR_STATUS_FAILED_PRECONDITION);
  oar_event_t bad = nullptr;
  EXPECT_EQ(status_of([&] { streams_.event_create(&device_, 0x80, &bad); }),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(bad, nullptr);
  for (oar_event_t e : {start, end, plain}) streams_.event_destroy(e);
  streams_.stream_destroy(stream);
}

TEST_F(SdkQueueStreamsTest, ReleaseDeviceRunsPendingWorkAndFreesWhatTheCallerLeft) {
  oar_stream_t stream = make_stream();
  make_event();
  std::atomic<bool> ran{false};
  QueueStreams::submit(stream, [&] { ran = true; });
  EXPECT_EQ(streams_.release_device(&device_), 2u);
  EXPECT_TRUE(ran);  // drained before release_device returned
  EXPECT_EQ(streams_.release_device(&device_), 0u);
}

TEST_F(SdkQueueStreamsTest, NullHandlesAreRefusedAndNullReleasesAreNoOps) {
  EXPECT_EQ(status_of([&] { streams_.stream_synchronize(nullptr); }), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([&] { QueueStreams::submit(nullptr, [] {}); }), OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([&] { streams_.stream_create(&device_, nullptr, nullptr); }),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(status_of([&] { streams_.stream_destroy(nullptr); }), OAR_STATUS_OK);
  EXPECT_EQ(status_of([&] { streams_.event_destroy(nullptr); }), OAR_STATUS_OK);
  oar_stream_desc_t desc{};
  desc.struct_size = OAR_STREAM_DESC_STRUCT_SIZE;
  desc.flags = 1;
  oar_stream_t stream = nullptr;
  EXPECT_EQ(status_of([&] { streams_.stream_create(&device_, &desc, &stream); }),
            OAR_STATUS_INVALID_ARGUMENT);
  EXPECT_EQ(stream, nullptr);
}

}  // namespace
}  // namespace oar::sdk
