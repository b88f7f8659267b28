// exp_f32 (kernels/vmath.h) against the C library's exp in double, over every
// 1,024th f32 in its domain and at the ends: within 2 ulp of the correctly
// rounded result, 0 below the subnormals, +inf on overflow, NaN for NaN (a
// NaN once sent the exponent arithmetic into signed overflow; the fuzzer's
// UBSan build caught it).
#include "kernels/vmath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace oar::cpu {
namespace {

float from_bits(uint32_t bits) {
  float x;
  std::memcpy(&x, &bits, sizeof x);
  return x;
}

// Distance in representable f32 values between two finite non-negative floats.
int64_t ulps(float a, float b) {
  int32_t ia, ib;
  std::memcpy(&ia, &a, sizeof ia);
  std::memcpy(&ib, &b, sizeof ib);
  return ia > ib ? int64_t{ia} - ib : int64_t{ib} - ia;
}

TEST(VmathTest, ExpIsWithinTwoUlpOverTheWholeRange) {
  int64_t worst = 0;
  float worst_x = 0;
  for (uint32_t bits = 0; bits < 0xff800000u; bits += 1024) {
    const float x = from_bits(bits);           // every sign, from 0 to the largest finite
    if (!(x > -87.3f && x < 88.7f)) continue;  // normal results; ends below
    const float expected = static_cast<float>(std::exp(static_cast<double>(x)));
    const int64_t d = ulps(exp_f32(x), expected);
    if (d > worst) worst = d, worst_x = x;
  }
  EXPECT_LE(worst, 2) << "at x = " << worst_x;
}

TEST(VmathTest, ExpOfSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(exp_f32(0.0f), 1.0f);
  EXPECT_EQ(exp_f32(-0.0f), 1.0f);
  EXPECT_EQ(exp_f32(kInf), kInf);
  EXPECT_EQ(exp_f32(89.0f), kInf);
  EXPECT_EQ(exp_f32(-kInf), 0.0f);
  EXPECT_EQ(exp_f32(-200.0f), 0.0f);
  EXPECT_GT(exp_f32(-100.0f), 0.0f);  // a subnormal, not flushed
  EXPECT_LE(ulps(exp_f32(-100.0f), static_cast<float>(std::exp(-100.0))), 1);
  EXPECT_TRUE(std::isnan(exp_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exp_f32(-std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isnan(exp_f32(from_bits(0xffc12345u))));  // a negative NaN with payload
}

}  // namespace
}  // namespace oar::cpu
