// Tests of WorkQueue's ordering and error model: the stream semantics of every
// plugin built on it (the cpu plugin has no asynchronous failure path of its
// own, so these are the only tests that reach it).
//
// Nothing here asserts how long anything takes. Where a test needs the worker
// to be busy it blocks it on a Gate that the test opens itself; the only
// timeouts are generous deadlock detectors.
#include "oar/sdk/work_queue.hpp"

#include <gtest/gtest.h>

#include <array>
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <stdexcept>
#include <thread>
#include <vector>

#include "oar/sdk/plugin.hpp"

namespace oar::sdk {
namespace {

// A one-shot latch: tasks wait() on it until the test calls open().
class Gate {
 public:
  void wait() const { opened_.wait(); }
  void open() { promise_.set_value(); }

 private:
  std::promise<void> promise_;
  std::shared_future<void> opened_ = promise_.get_future().share();
};

void throw_data_loss() { throw oar::sdk::Error(OAR_STATUS_DATA_LOSS, "boom"); }

bool is_done(const Marker& marker) {
  bool done = false;
  marker.query(&done);
  return done;
}

TEST(SdkWorkQueueTest, WorkRunsInSubmissionOrder) {
  WorkQueue queue("order");
  std::vector<int> order;  // touched only by the worker until synchronize
  for (int i = 0; i < 100; ++i) queue.submit([&order, i] { order.push_back(i); });

  ASSERT_TRUE(queue.synchronize().ok());
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
}

TEST(SdkWorkQueueTest, WorkAfterAFailureIsSkipped) {
  WorkQueue queue("skip");
  bool before_ran = false;
  bool after_ran = false;
  queue.submit([&] { before_ran = true; });
  queue.submit(throw_data_loss);
  queue.submit([&] { after_ran = true; });

  QueueStatus status = queue.synchronize();
  EXPECT_EQ(status.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(status.message, "boom");
  EXPECT_TRUE(before_ran);
  EXPECT_FALSE(after_ran);
}

TEST(SdkWorkQueueTest, MarkersAfterAFailureCarryTheError) {
  WorkQueue queue("markers");
  auto before = std::make_shared<Marker>();
  auto after = std::make_shared<Marker>();
  queue.submit_marker(before);
  queue.submit(throw_data_loss);
  queue.submit_marker(after);
  ASSERT_EQ(queue.synchronize().code, OAR_STATUS_DATA_LOSS);

  bool done = false;
  QueueStatus before_status = before->query(&done);
  EXPECT_TRUE(done);
  EXPECT_EQ(before_status.code, OAR_STATUS_OK);
  EXPECT_EQ(before_status.message, "");

  done = false;
  QueueStatus after_status = after->query(&done);
  EXPECT_TRUE(done);
  EXPECT_EQ(after_status.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(after_status.message, "boom");
  EXPECT_EQ(after->wait().code, OAR_STATUS_DATA_LOSS);
}

TEST(SdkWorkQueueTest, CallbacksReceiveTheStreamError) {
  WorkQueue queue("callbacks");
  QueueStatus seen_before{OAR_STATUS_UNKNOWN, "not called"};
  QueueStatus seen_after{OAR_STATUS_UNKNOWN, "not called"};
  queue.submit_observer([&](const QueueStatus& status) { seen_before = status; });
  queue.submit(throw_data_loss);
  queue.submit_observer([&](const QueueStatus& status) { seen_after = status; });
  ASSERT_EQ(queue.synchronize().code, OAR_STATUS_DATA_LOSS);

  EXPECT_EQ(seen_before.code, OAR_STATUS_OK);
  EXPECT_EQ(seen_before.message, "");
  EXPECT_EQ(seen_after.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(seen_after.message, "boom");
}

TEST(SdkWorkQueueTest, FailureIsSticky) {
  WorkQueue queue("sticky");
  queue.submit(throw_data_loss);
  ASSERT_EQ(queue.synchronize().code, OAR_STATUS_DATA_LOSS);

  // Later work is skipped, a later throw with it: nothing replaces or clears
  // the first error.
  bool ran = false;
  queue.submit([&] { ran = true; });
  queue.submit([] { throw oar::sdk::Error(OAR_STATUS_ABORTED, "second"); });
  QueueStatus status = queue.synchronize();
  EXPECT_EQ(status.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(status.message, "boom");
  EXPECT_FALSE(ran);

  bool idle = false;
  status = queue.query(&idle);
  EXPECT_TRUE(idle);
  EXPECT_EQ(status.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(status.message, "boom");
}

TEST(SdkWorkQueueTest, SdkErrorKeepsItsCodeAndMessage) {
  WorkQueue queue("sdk-error");
  queue.submit([] { throw oar::sdk::Error(OAR_STATUS_OUT_OF_RANGE, "index 7 of 3"); });
  QueueStatus status = queue.synchronize();
  EXPECT_EQ(status.code, OAR_STATUS_OUT_OF_RANGE);
  EXPECT_EQ(status.message, "index 7 of 3");
}

TEST(SdkWorkQueueTest, StdExceptionMapsToInternal) {
  WorkQueue queue("std-exception");
  queue.submit([] { throw std::runtime_error("std"); });
  QueueStatus status = queue.synchronize();
  EXPECT_EQ(status.code, OAR_STATUS_INTERNAL);
  EXPECT_EQ(status.message, "std");
}

TEST(SdkWorkQueueTest, NonStdExceptionMapsToInternal) {
  WorkQueue queue("non-std");
  queue.submit([] { throw 42; });
  EXPECT_EQ(queue.synchronize().code, OAR_STATUS_INTERNAL);
}

TEST(SdkWorkQueueTest, ThrowIfErrorRaisesTheQueueStatus) {
  EXPECT_NO_THROW(QueueStatus{}.throw_if_error());
  try {
    QueueStatus{OAR_STATUS_DATA_LOSS, "boom"}.throw_if_error();
    FAIL() << "throw_if_error did not throw";
  } catch (const oar::sdk::Error& e) {
    EXPECT_EQ(e.code(), OAR_STATUS_DATA_LOSS);
    EXPECT_STREQ(e.what(), "boom");
  }
}

TEST(SdkWorkQueueTest, WaitPropagatesTheErrorToTheWaitingQueue) {
  WorkQueue failed("failed");
  auto marker = std::make_shared<Marker>();
  failed.submit(throw_data_loss);
  failed.submit_marker(marker);
  ASSERT_EQ(failed.synchronize().code, OAR_STATUS_DATA_LOSS);

  WorkQueue waiting("waiting");
  bool ran = false;
  waiting.submit_wait(marker);
  waiting.submit([&] { ran = true; });
  QueueStatus status = waiting.synchronize();
  EXPECT_EQ(status.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(status.message, "waited on an event whose stream had failed: boom");
  EXPECT_FALSE(ran);
}

TEST(SdkWorkQueueTest, WaitOnASucceededMarkerKeepsTheQueueHealthy) {
  WorkQueue producer("producer");
  auto marker = std::make_shared<Marker>();
  producer.submit_marker(marker);
  ASSERT_TRUE(producer.synchronize().ok());

  WorkQueue consumer("consumer");
  bool ran = false;
  consumer.submit_wait(marker);
  consumer.submit([&] { ran = true; });
  EXPECT_TRUE(consumer.synchronize().ok());
  EXPECT_TRUE(ran);
}

TEST(SdkWorkQueueTest, CrossQueueWaitDoesNotBlockTheHost) {
  WorkQueue producer("producer");
  WorkQueue consumer("consumer");
  Gate gate;
  auto marker = std::make_shared<Marker>();
  std::atomic<bool> producer_done{false};
  std::atomic<bool> consumer_ran{false};
  std::atomic<bool> consumer_saw_producer_done{false};
  producer.submit([&] {
    gate.wait();
    producer_done = true;
  });
  producer.submit_marker(marker);

  // The producer cannot reach the marker until the gate opens, and only this
  // thread opens it: if submit_wait blocked its caller, the submitter would
  // never return. 30 s is a deadlock detector, not a performance bound.
  std::promise<void> submitted;
  std::thread submitter([&] {
    consumer.submit_wait(marker);
    consumer.submit([&] {
      consumer_saw_producer_done = producer_done.load();
      consumer_ran = true;
    });
    submitted.set_value();
  });
  std::future_status returned = submitted.get_future().wait_for(std::chrono::seconds(30));
  bool marker_done_while_closed = is_done(*marker);
  bool consumer_ran_while_closed = consumer_ran.load();
  bool consumer_idle_while_closed = true;
  consumer.query(&consumer_idle_while_closed);

  gate.open();
  submitter.join();
  ASSERT_EQ(returned, std::future_status::ready) << "submit_wait blocked the calling thread";
  EXPECT_FALSE(marker_done_while_closed);
  EXPECT_FALSE(consumer_ran_while_closed);
  EXPECT_FALSE(consumer_idle_while_closed);

  EXPECT_TRUE(consumer.synchronize().ok());
  EXPECT_TRUE(consumer_ran);
  EXPECT_TRUE(consumer_saw_producer_done);
}

TEST(SdkWorkQueueTest, ConcurrentSubmittersLoseNothing) {
  constexpr int kThreads = 4;
  constexpr int kTasksPerThread = 2000;
  WorkQueue queue("concurrent");
  std::array<std::atomic<int>, kThreads> ran{};
  std::array<int, kThreads> ran_at_synchronize{};
  std::array<bool, kThreads> ok_at_synchronize{};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kTasksPerThread; ++i) queue.submit([&ran, t] { ran[t]++; });
      // A synchronize waits for everything this thread submitted before it,
      // however much the other threads keep submitting.
      ok_at_synchronize[t] = queue.synchronize().ok();
      ran_at_synchronize[t] = ran[t].load();
    });
  }
  for (std::thread& thread : threads) thread.join();

  for (int t = 0; t < kThreads; ++t) {
    EXPECT_TRUE(ok_at_synchronize[t]) << "thread " << t;
    EXPECT_EQ(ran_at_synchronize[t], kTasksPerThread) << "thread " << t;
    EXPECT_EQ(ran[t].load(), kTasksPerThread) << "thread " << t;
  }
}

TEST(SdkWorkQueueTest, DestructorDrainsPendingWork) {
  auto queue = std::make_unique<WorkQueue>("drain");
  Gate gate;
  std::atomic<int> ran{0};
  queue->submit([&] { gate.wait(); });
  for (int i = 0; i < 100; ++i) queue->submit([&] { ran++; });
  bool idle = true;
  queue->query(&idle);
  ASSERT_FALSE(idle);
  ASSERT_EQ(ran.load(), 0);

  // Open the gate from elsewhere, most likely once the destructor has already
  // asked the worker to stop; the count is exact however the race goes.
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    gate.open();
  });
  queue.reset();
  opener.join();
  EXPECT_EQ(ran.load(), 100);
}

TEST(SdkWorkQueueTest, QueryReportsBusyThenIdle) {
  WorkQueue queue("query");
  bool idle = false;
  QueueStatus status = queue.query(&idle);
  EXPECT_TRUE(idle) << "a new queue is idle";
  EXPECT_TRUE(status.ok());

  // Busy while the work is queued, and still busy once the worker has taken
  // it off the queue and is running it.
  Gate started;
  Gate gate;
  queue.submit([&] {
    started.open();
    gate.wait();
  });
  idle = true;
  status = queue.query(&idle);
  EXPECT_FALSE(idle) << "work submitted";
  EXPECT_TRUE(status.ok());

  started.wait();
  idle = true;
  status = queue.query(&idle);
  EXPECT_FALSE(idle) << "work running, nothing queued";
  EXPECT_TRUE(status.ok());

  gate.open();
  ASSERT_TRUE(queue.synchronize().ok());
  idle = false;
  status = queue.query(&idle);
  EXPECT_TRUE(idle);
  EXPECT_TRUE(status.ok());
}

TEST(SdkWorkQueueTest, MarkerIsNotDoneUntilTheQueueReachesIt) {
  WorkQueue queue("pending");
  Gate gate;
  auto marker = std::make_shared<Marker>();
  queue.submit([&] { gate.wait(); });
  queue.submit_marker(marker);

  bool done = true;
  QueueStatus status = marker->query(&done);
  EXPECT_FALSE(done);
  EXPECT_TRUE(status.ok());

  gate.open();
  EXPECT_TRUE(marker->wait().ok());
  EXPECT_TRUE(is_done(*marker));
}

TEST(SdkWorkQueueTest, MarkerTimestampsAreMonotonic) {
  WorkQueue queue("timestamps");
  constexpr int kMarkers = 20;
  std::vector<std::shared_ptr<Marker>> markers;
  uint64_t start = steady_now_ns();
  for (int i = 0; i < kMarkers; ++i) {
    markers.push_back(std::make_shared<Marker>());
    queue.submit([] { std::this_thread::sleep_for(std::chrono::microseconds(100)); });
    queue.submit_marker(markers.back());
  }
  ASSERT_TRUE(queue.synchronize().ok());
  uint64_t end = steady_now_ns();

  uint64_t previous = start;
  for (int i = 0; i < kMarkers; ++i) {
    ASSERT_TRUE(is_done(*markers[i])) << "marker " << i;
    uint64_t stamp = markers[i]->timestamp_ns();
    EXPECT_GE(stamp, previous) << "marker " << i;
    previous = stamp;
  }
  EXPECT_LE(previous, end);
  // Work ran between consecutive markers, so the stamps strictly increase
  // from the first to the last.
  EXPECT_GT(markers.back()->timestamp_ns(), markers.front()->timestamp_ns());
}

// Inline work (WorkQueueOptions::inline_max_bytes): small kernels and copies
// on an idle queue run on the submitting thread, with the queue's ordering.
constexpr TaskInfo kSmallKernel{TaskInfo::kKernel, 16};
constexpr TaskInfo kBigKernel{TaskInfo::kKernel, 1 << 20};

WorkQueueOptions inline_up_to(uint64_t bytes) {
  WorkQueueOptions options;
  options.inline_max_bytes = bytes;
  return options;
}

TEST(SdkWorkQueueTest, InlineRunsSmallWorkOnTheCallerWhenIdle) {
  WorkQueue queue("inline", nullptr, inline_up_to(64));
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id small_on, big_on, other_on, copy_on;
  bool small_done_at_return = false;
  queue.submit([&] { small_on = std::this_thread::get_id(); }, kSmallKernel);
  small_done_at_return = small_on == caller;
  ASSERT_TRUE(queue.synchronize().ok());
  queue.submit([&] { copy_on = std::this_thread::get_id(); }, {TaskInfo::kCopy, 64});
  ASSERT_TRUE(queue.synchronize().ok());
  queue.submit([&] { big_on = std::this_thread::get_id(); }, kBigKernel);
  ASSERT_TRUE(queue.synchronize().ok());
  queue.submit([&] { other_on = std::this_thread::get_id(); });  // kOther, 0 bytes
  ASSERT_TRUE(queue.synchronize().ok());

  EXPECT_TRUE(small_done_at_return) << "the small kernel ran (and finished) in submit";
  EXPECT_EQ(copy_on, caller);
  EXPECT_NE(big_on, caller) << "work over the limit goes to the worker";
  EXPECT_NE(other_on, caller) << "only kernels and copies run inline";

  WorkQueue off("inline-off");  // the default: never inline
  std::thread::id off_on;
  off.submit([&] { off_on = std::this_thread::get_id(); }, kSmallKernel);
  ASSERT_TRUE(off.synchronize().ok());
  EXPECT_NE(off_on, caller);
}

TEST(SdkWorkQueueTest, InlineWaitsForWorkAlreadyQueued) {
  WorkQueue queue("inline-busy", nullptr, inline_up_to(64));
  Gate gate;
  std::vector<int> order;  // ordered by the queue, not by a lock of its own
  std::thread::id small_on;
  queue.submit([&] {
    gate.wait();
    order.push_back(1);
  });
  queue.submit(
      [&] {
        small_on = std::this_thread::get_id();
        order.push_back(2);
      },
      kSmallKernel);
  bool idle = true;
  queue.query(&idle);
  gate.open();
  ASSERT_TRUE(queue.synchronize().ok());
  EXPECT_FALSE(idle);
  EXPECT_NE(small_on, std::this_thread::get_id()) << "a busy queue runs nothing inline";
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(SdkWorkQueueTest, WorkSubmittedDuringInlineWorkRunsAfterIt) {
  WorkQueue queue("inline-during", nullptr, inline_up_to(64));
  Gate started;
  Gate release;
  std::vector<int> order;
  bool idle_during = true;
  std::thread inliner([&] {
    queue.submit(
        [&] {
          started.open();
          release.wait();
          order.push_back(1);
        },
        kSmallKernel);
  });
  started.wait();
  // The inline task holds the queue: other threads' work, small or big,
  // queues behind it, and a marker is not done before it.
  auto marker = std::make_shared<Marker>();
  queue.submit([&] { order.push_back(2); }, kBigKernel);
  queue.submit([&] { order.push_back(3); }, kSmallKernel);
  queue.submit_marker(marker);
  queue.query(&idle_during);
  bool marker_done_during = is_done(*marker);
  release.open();
  inliner.join();
  ASSERT_TRUE(queue.synchronize().ok());
  EXPECT_FALSE(idle_during);
  EXPECT_FALSE(marker_done_during);
  EXPECT_TRUE(is_done(*marker));
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(SdkWorkQueueTest, InlineFailureFailsTheQueueLikeTheWorker) {
  WorkQueue queue("inline-fail", nullptr, inline_up_to(64));
  bool after_ran = false;
  queue.submit(throw_data_loss, kSmallKernel);  // reported later, not thrown here
  queue.submit([&] { after_ran = true; }, kSmallKernel);
  auto marker = std::make_shared<Marker>();
  queue.submit_marker(marker);
  bool idle = false;
  QueueStatus queried = queue.query(&idle);
  bool done = false;
  QueueStatus marked = marker->query(&done);

  EXPECT_TRUE(idle);
  EXPECT_EQ(queried.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(queried.message, "boom");
  EXPECT_FALSE(after_ran);
  EXPECT_TRUE(done) << "a marker on an idle queue completes at once";
  EXPECT_EQ(marked.code, OAR_STATUS_DATA_LOSS);
  EXPECT_EQ(queue.synchronize().code, OAR_STATUS_DATA_LOSS);
}

TEST(SdkWorkQueueTest, InlineLeavesCallbacksAndOpenWaitsToTheWorker) {
  WorkQueue producer("inline-prod", nullptr, inline_up_to(64));
  WorkQueue queue("inline-cb", nullptr, inline_up_to(64));
  const std::thread::id caller = std::this_thread::get_id();
  std::thread::id callback_on;
  queue.submit_observer([&](const QueueStatus&) { callback_on = std::this_thread::get_id(); });
  ASSERT_TRUE(queue.synchronize().ok());
  EXPECT_NE(callback_on, caller) << "host callbacks run on the worker";

  // A wait on a marker not yet done goes to the worker and holds what follows.
  Gate gate;
  auto marker = std::make_shared<Marker>();
  producer.submit([&] { gate.wait(); });
  producer.submit_marker(marker);
  bool ran = false;
  queue.submit_wait(marker);  // returns: the caller never blocks
  queue.submit([&] { ran = true; }, kSmallKernel);
  bool ran_before_open = ran;
  gate.open();
  ASSERT_TRUE(queue.synchronize().ok());
  EXPECT_FALSE(ran_before_open);
  EXPECT_TRUE(ran);

  // A wait on a completed marker is checked at once; one that failed fails
  // the queue as on the worker.
  auto failed = std::make_shared<Marker>();
  failed->complete(QueueStatus{OAR_STATUS_DATA_LOSS, "gone"});
  queue.submit_wait(failed);
  bool idle = false;
  EXPECT_EQ(queue.query(&idle).code, OAR_STATUS_DATA_LOSS);
  EXPECT_TRUE(idle);
}

TEST(SdkWorkQueueTest, WrapperTurnsInlineOff) {
  std::atomic<int> wrapped{0};
  WorkQueue queue(
      "inline-wrap",
      [&](const TaskInfo&, const std::function<void()>& work) {
        wrapped++;
        work();
      },
      inline_up_to(64));
  std::thread::id on;
  queue.submit([&] { on = std::this_thread::get_id(); }, kSmallKernel);
  ASSERT_TRUE(queue.synchronize().ok());
  EXPECT_NE(on, std::this_thread::get_id()) << "a modelled device stays asynchronous";
  EXPECT_EQ(wrapped.load(), 1);
}

// Tasks touch plain (non-atomic) counters: only the queue's ordering makes
// that safe, which ThreadSanitizer checks (scripts/test.sh runs WorkQueue).
TEST(SdkWorkQueueTest, ConcurrentInlineAndQueuedWorkKeepsEachThreadsOrder) {
  constexpr int kThreads = 4;
  constexpr int kTasksPerThread = 2000;
  WorkQueue queue("inline-conc", nullptr, inline_up_to(64));
  std::array<int, kThreads> next{};
  std::array<int, kThreads> out_of_order{};
  std::atomic<int> inline_runs{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      const std::thread::id self = std::this_thread::get_id();
      for (int i = 0; i < kTasksPerThread; ++i) {
        auto task = [&, t, i, self] {
          if (next[t] != i) out_of_order[t]++;
          next[t] = i + 1;
          if (std::this_thread::get_id() == self) inline_runs++;
        };
        // Every fifth task is big (the worker's); the rest may run inline,
        // which the synchronizes make likelier (an idle queue).
        queue.submit(task, i % 5 == 0 ? kBigKernel : kSmallKernel);
        if (i % 16 == 0) queue.synchronize();
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  ASSERT_TRUE(queue.synchronize().ok());
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(next[t], kTasksPerThread) << "thread " << t;
    EXPECT_EQ(out_of_order[t], 0) << "thread " << t;
  }
  // How many ran inline depends on the scheduler (the other tests pin down
  // when work runs inline); recorded, not asserted.
  RecordProperty("inline_runs", inline_runs.load());
}

}  // namespace
}  // namespace oar::sdk
