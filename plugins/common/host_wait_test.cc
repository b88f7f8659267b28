#include "oar/sdk/host_wait.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace oar::sdk {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

bool kIdleHost() { return false; }
bool kBusyHost() { return true; }

TEST(SdkSpinBudgetTest, UnsetOrEmptyIsTheDefault) {
  std::string problem;
  EXPECT_EQ(parse_spin_budget(nullptr, &problem), microseconds(100));
  EXPECT_EQ(parse_spin_budget("", &problem), microseconds(100));
  EXPECT_TRUE(problem.empty());
}

TEST(SdkSpinBudgetTest, ANumberIsMicroseconds) {
  std::string problem;
  EXPECT_EQ(parse_spin_budget("0", &problem), nanoseconds(0));
  EXPECT_EQ(parse_spin_budget("250", &problem), microseconds(250));
  EXPECT_EQ(parse_spin_budget("1000000", &problem), microseconds(1000000));
  EXPECT_TRUE(problem.empty());
}

TEST(SdkSpinBudgetTest, ABadValueGivesTheDefaultAndSaysWhy) {
  for (const char* bad : {"abc", "-1", "10us", "1000001", "99999999999999999999999"}) {
    std::string problem;
    EXPECT_EQ(parse_spin_budget(bad, &problem), microseconds(100)) << bad;
    EXPECT_NE(problem.find(std::string("OAR_SYNC_SPIN_US=\"") + bad + "\""), std::string::npos)
        << problem;
    EXPECT_NE(problem.find("set it to 0"), std::string::npos) << problem;
  }
}

TEST(SdkSpinUntilTest, ReturnsAsSoonAsDone) {
  int calls = 0;
  EXPECT_TRUE(spin_until(milliseconds(1000), [&] { return ++calls == 5; }));
  EXPECT_EQ(calls, 5);
}

TEST(SdkSpinUntilTest, GivesUpWhenTheBudgetIsSpent) {
  int calls = 0;
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(spin_until(microseconds(300), [&] {
    ++calls;
    return false;
  }));
  auto spent = std::chrono::steady_clock::now() - start;
  EXPECT_GE(spent, microseconds(300));
  EXPECT_LT(spent, milliseconds(500));  // bounded: one poll and one pause past the budget
  EXPECT_GT(calls, 1);
}

TEST(SdkSpinUntilTest, AZeroBudgetNeverPolls) {
  int calls = 0;
  EXPECT_FALSE(spin_until(nanoseconds(0), [&] {
    ++calls;
    return true;
  }));
  EXPECT_EQ(calls, 0);
}

TEST(SdkHostWaitTest, PollsUntilAWaitOutlastsTheBudgetThenBlocksUntilOneIsShort) {
  HostWait waits(microseconds(100), kIdleHost);
  EXPECT_TRUE(waits.should_poll());  // no wait yet
  // Durations, not time points: under qemu the time between taking a time
  // point and the call can itself exceed the budget.
  waits.finished_after(microseconds(40));  // short: polling would have ended it
  EXPECT_TRUE(waits.should_poll());
  waits.finished_after(milliseconds(12));  // a long copy: polling only cost a core
  EXPECT_FALSE(waits.should_poll());
  waits.finished_after(microseconds(30));  // short again
  EXPECT_TRUE(waits.should_poll());
}

TEST(SdkHostWaitTest, AZeroBudgetNeverPolls) {
  HostWait waits(nanoseconds(0), kIdleHost);
  EXPECT_FALSE(waits.should_poll());
  int calls = 0;
  EXPECT_FALSE(waits.poll([&] {
    ++calls;
    return true;
  }));
  EXPECT_EQ(calls, 0);
}

TEST(SdkHostWaitTest, PollUsesItsBudget) {
  HostWait waits(microseconds(200), kIdleHost);
  auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(waits.poll([] { return false; }));
  EXPECT_GE(std::chrono::steady_clock::now() - start, microseconds(200));
  EXPECT_TRUE(waits.poll([] { return true; }));
}

TEST(SdkHostWaitTest, ABusyHostBlocksAtOnce) {
  HostWait waits(microseconds(100), kBusyHost);
  EXPECT_FALSE(waits.should_poll());
}

// One wait of |waits| that took |took|, polled or blocked as it chose.
bool wait_once(HostWait& waits, nanoseconds took) {
  bool polled = waits.should_poll();
  waits.finished_after(took);
  return polled;
}

TEST(SdkHostWaitTest, TriesPollingOnABusyHostAndKeepsItWhenItIsFaster) {
  HostWait waits(microseconds(100), kBusyHost);
  int polled = 0;
  for (uint32_t i = 0; i + 1 < HostWait::kExploreEvery; ++i) {
    polled += wait_once(waits, microseconds(50));
  }
  EXPECT_EQ(polled, 0) << "a busy host blocks until polling was timed";
  EXPECT_EQ(waits.polled_median_ns(), -1);
  EXPECT_EQ(waits.blocked_median_ns(), 50000);
  EXPECT_TRUE(wait_once(waits, microseconds(20))) << "every kExploreEvery-th wait tries polling";
  EXPECT_EQ(waits.polled_median_ns(), 20000);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(wait_once(waits, microseconds(20))) << i;
}

TEST(SdkHostWaitTest, StopsPollingOnAnIdleHostWhenBlockingIsFaster) {
  HostWait waits(microseconds(100), kIdleHost);
  // Polls first; a machine whose device threads need the poller's core.
  for (uint32_t i = 0; i + 1 < HostWait::kExploreEvery; ++i) {
    EXPECT_TRUE(wait_once(waits, microseconds(60))) << i;
  }
  EXPECT_FALSE(wait_once(waits, microseconds(50))) << "every kExploreEvery-th wait tries blocking";
  int polled = 0;
  for (uint32_t i = 0; i < 2 * HostWait::kExploreEvery; ++i) {
    polled += wait_once(waits, microseconds(50));
  }
  EXPECT_EQ(polled, 2) << "one wait in kExploreEvery still polls";
}

// One wait of |waits| that took |polled| when it polled and |blocked| when it
// blocked; true when it polled.
bool wait_either(HostWait& waits, nanoseconds polled, nanoseconds blocked) {
  bool poll = waits.should_poll();
  waits.finished_after(poll ? polled : blocked);
  return poll;
}

TEST(SdkHostWaitTest, RetriesAClearLoserLessOften) {
  HostWait waits(microseconds(100), kIdleHost);
  for (uint32_t i = 0; i + 1 < HostWait::kExploreEvery; ++i) wait_once(waits, microseconds(60));
  EXPECT_FALSE(wait_once(waits, microseconds(20)));  // blocking: 3 times as fast
  const uint32_t period = HostWait::kExploreEvery * HostWait::kClearLoserFactor;
  int polled = 0;
  for (uint32_t i = 0; i < 2 * period; ++i) {
    polled += wait_either(waits, microseconds(60), microseconds(20));
  }
  EXPECT_EQ(polled, 2) << "one wait in kExploreEvery * kClearLoserFactor polls";
}

// |retry|: set_retry_stale_loser. Returns how many of 4 * kExploreEvery
// waits polled after polling became a clear loser and then as fast as blocking.
int polls_after_polling_recovered(bool retry) {
  HostWait waits(microseconds(100), kIdleHost);
  waits.set_retry_stale_loser(retry);
  for (uint32_t i = 0; i + 1 < HostWait::kExploreEvery; ++i) wait_once(waits, microseconds(90));
  EXPECT_FALSE(wait_once(waits, microseconds(20)));  // blocking: clearly faster
  const uint32_t period = HostWait::kExploreEvery * HostWait::kClearLoserFactor;
  int polled = 0;
  uint32_t waited = 0;
  while (polled == 0 && waited < 2 * period) {  // up to the next polled wait
    polled += wait_either(waits, microseconds(20), microseconds(20));
    ++waited;
  }
  EXPECT_EQ(polled, 1);
  // The machine changed: polling now takes what blocking takes. Its median
  // (90 us) is stale, but its latest wait was not clearly slower.
  polled = 0;
  for (uint32_t i = 0; i < 4 * HostWait::kExploreEvery; ++i) {
    polled += wait_either(waits, microseconds(15), microseconds(20));
  }
  return polled;
}

TEST(SdkHostWaitTest, RetriesAClearLoserAtTheUsualRateOnceItsLatestWaitWasFast) {
  EXPECT_GE(polls_after_polling_recovered(true), 3)
      << "retried every kExploreEvery-th wait, not every "
      << HostWait::kExploreEvery * HostWait::kClearLoserFactor << "th";
  EXPECT_LE(polls_after_polling_recovered(false), 1) << "off by default: the stale median rules";
}

TEST(SdkHostWaitTest, FollowsTheMedianOfRecentWaitsNotOneOutlier) {
  HostWait waits(microseconds(100), kIdleHost);
  for (uint32_t i = 0; i + 1 < HostWait::kExploreEvery; ++i) wait_once(waits, microseconds(20));
  EXPECT_FALSE(wait_once(waits, microseconds(30)));  // blocking tried: slower
  EXPECT_TRUE(wait_once(waits, microseconds(95)));   // one slow polled wait (a preemption)
  EXPECT_EQ(waits.polled_median_ns(), 20000);
  EXPECT_TRUE(waits.should_poll()) << "an average would have turned to blocking";
}

TEST(SdkHostWaitTest, WaitsThatHadToBlockAreNotCounted) {
  HostWait waits(microseconds(100), kIdleHost);
  wait_once(waits, milliseconds(12));                // a long copy, polled: counted
  EXPECT_FALSE(wait_once(waits, milliseconds(12)));  // blocked because the last wait was long
  EXPECT_EQ(waits.blocked_median_ns(), -1);
  EXPECT_EQ(waits.polled_median_ns(), 12000000);
}

TEST(SdkHostOversubscribedTest, RunnableThreadsAboveTheCpusMeanBusy) {
  EXPECT_FALSE(loadavg_oversubscribed("0.52 0.58 0.59 2/412 12345\n", 2));
  EXPECT_TRUE(loadavg_oversubscribed("3.90 3.58 2.59 3/412 12345\n", 2));
  EXPECT_FALSE(loadavg_oversubscribed("3.90 3.58 2.59 3/412 12345\n", 4));
  EXPECT_TRUE(loadavg_oversubscribed("9.00 9.00 9.00 17/900 1\n", 16));
}

TEST(SdkHostOversubscribedTest, UnreadableTextIsNotBusy) {
  EXPECT_FALSE(loadavg_oversubscribed("", 2));
  EXPECT_FALSE(loadavg_oversubscribed("0.1 0.2 0.3", 2));
  EXPECT_FALSE(loadavg_oversubscribed("0.1 0.2 0.3 x/5 1", 2));
  EXPECT_FALSE(loadavg_oversubscribed("0.1 0.2 0.3 9/5 1", 0));
}

}  // namespace
}  // namespace oar::sdk
