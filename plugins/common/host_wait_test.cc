#include "host_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

namespace oar::plugin {
namespace {

using std::chrono::microseconds;
using std::chrono::milliseconds;
using std::chrono::nanoseconds;

TEST(SpinBudgetTest, UnsetOrEmptyIsTheDefault) {
  std::string problem;
  EXPECT_EQ(parse_spin_budget(nullptr, &problem), microseconds(100));
  EXPECT_EQ(parse_spin_budget("", &problem), microseconds(100));
  EXPECT_TRUE(problem.empty());
}

TEST(SpinBudgetTest, ANumberIsMicroseconds) {
  std::string problem;
  EXPECT_EQ(parse_spin_budget("0", &problem), nanoseconds(0));
  EXPECT_EQ(parse_spin_budget("250", &problem), microseconds(250));
  EXPECT_EQ(parse_spin_budget("1000000", &problem), microseconds(1000000));
  EXPECT_TRUE(problem.empty());
}

TEST(SpinBudgetTest, ABadValueGivesTheDefaultAndSaysWhy) {
  for (const char* bad : {"abc", "-1", "10us", "1000001", "99999999999999999999999"}) {
    std::string problem;
    EXPECT_EQ(parse_spin_budget(bad, &problem), microseconds(100)) << bad;
    EXPECT_NE(problem.find(std::string("OAR_SYNC_SPIN_US=\"") + bad + "\""), std::string::npos)
        << problem;
    EXPECT_NE(problem.find("set it to 0"), std::string::npos) << problem;
  }
}

TEST(SpinUntilTest, ReturnsAsSoonAsDone) {
  int calls = 0;
  EXPECT_TRUE(spin_until(milliseconds(1000), [&] { return ++calls == 5; }));
  EXPECT_EQ(calls, 5);
}

TEST(SpinUntilTest, GivesUpWhenTheBudgetIsSpent) {
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

TEST(SpinUntilTest, AZeroBudgetNeverPolls) {
  int calls = 0;
  EXPECT_FALSE(spin_until(nanoseconds(0), [&] {
    ++calls;
    return true;
  }));
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace oar::plugin
