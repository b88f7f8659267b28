// exp_f32 (kernels/vmath.h) against the C library's exp in double, over every
// 1,024th f32 in its domain and at the ends: within 2 ulp of the correctly
// rounded result, 0 below the subnormals, +inf on overflow, NaN for NaN (a
// NaN once sent the exponent arithmetic into signed overflow; the fuzzer's
// UBSan build caught it). gelu_f32 and gelu_tanh_f32 against the formulas in
// double over every 2,039th f32 of both signs up to 16.5, and their special values
// (the figures in the comments: every 509th); gelu_grad_f32 and
// gelu_tanh_grad_f32 likewise (their figures: every 2,039th).
#include "kernels/vmath.h"

#include <gtest/gtest.h>

#include <algorithm>
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

TEST(VmathTest, ExpNonpositiveIsExpBelowZero) {
  for (uint32_t bits = 0x80000000u; bits <= 0xff800000u; bits += 4093) {
    const float x = from_bits(bits);  // -0 to -inf
    EXPECT_EQ(exp_nonpositive_f32(x), exp_f32(x)) << "at x = " << x;
  }
  EXPECT_EQ(exp_nonpositive_f32(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(exp_nonpositive_f32(std::numeric_limits<float>::quiet_NaN())));
}

// Distance in representable f32 values between two finite floats of any
// signs (+0 and -0 are one value).
int64_t signed_ulps(float a, float b) {
  auto ordered = [](float v) {
    int32_t i;
    std::memcpy(&i, &v, sizeof i);
    return i < 0 ? -int64_t{i & 0x7fffffff} : int64_t{i};
  };
  const int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}

// gelu in double: x Phi(x) from erfc, which keeps the negative tail's
// relative precision (1 + erf cancels there), rounded to f32.
float gelu_reference(float x) {
  const double v = x, tail = 0.5 * std::erfc(std::fabs(v) * 0.70710678118654752440);
  return static_cast<float>(v < 0 ? v * tail : v * (1 - tail));
}

// x / (1 + e^(-2u)), u = sqrt(2 / pi) (x + 0.044715 x^3), in double.
float gelu_tanh_reference(float x) {
  const double v = x, u = 0.79788456080286535588 * (v + 0.044715 * v * v * v);
  return static_cast<float>(v / (1 + std::exp(-2 * u)));
}

// Every 2,039th positive f32 bit pattern up to 16.5 (about 540,000, every
// exponent from the subnormals up; past 16.5 gelu is x or -0) and every
// 65,521st above, with their negatives: the largest distance in ulps from the
// correctly rounded result, for |x| <= |near| and everywhere, and where.
struct Worst {
  int64_t near = 0, all = 0;
  float near_x = 0, all_x = 0;
};

template <typename F, typename Reference>
Worst sweep(F f, Reference reference, float near) {
  Worst w;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += from_bits(bits) < 16.5f ? 2039 : 65521) {
    for (const float x : {from_bits(bits), -from_bits(bits)}) {
      const int64_t d = signed_ulps(f(x), reference(x));
      if (d > w.all) w.all = d, w.all_x = x;
      if (std::fabs(x) <= near && d > w.near) w.near = d, w.near_x = x;
    }
  }
  return w;
}

TEST(VmathTest, GeluIsWithinSixUlpEverywhere) {
  const Worst w = sweep(gelu_f32, gelu_reference, 0);
  EXPECT_LE(w.all, 6) << "at x = " << w.all_x;  // 5 measured (every 509th), at x = 0.0018
}

// The tanh form: u rounded in f32, whose error e^(2u) multiplies by |2u|
// (-2u is about 88 where gelu reaches the subnormals).
TEST(VmathTest, GeluTanhIsWithinItsStatedError) {
  const Worst w = sweep(gelu_tanh_f32, gelu_tanh_reference, 3);
  EXPECT_LE(w.near, 16) << "|x| <= 3, at x = " << w.near_x;   // 11 measured, at x = -2.98
  EXPECT_LE(w.all, 256) << "everywhere, at x = " << w.all_x;  // 173 measured, at x = -9.37
}

TEST(VmathTest, GeluOfSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto gelu : {gelu_f32, gelu_tanh_f32}) {
    EXPECT_EQ(gelu(kInf), kInf);
    EXPECT_TRUE(std::isnan(gelu(-kInf)));  // -inf * 0, docs/ops.md
    EXPECT_TRUE(std::isnan(gelu(nan)));
    EXPECT_TRUE(std::isnan(gelu(-nan)));
    EXPECT_TRUE(std::isnan(gelu(from_bits(0x7f800001u))));  // a signalling NaN's bits
    EXPECT_EQ(gelu(0.0f), 0.0f);
    EXPECT_FALSE(std::signbit(gelu(0.0f)));
    EXPECT_EQ(gelu(-0.0f), 0.0f);
    EXPECT_TRUE(std::signbit(gelu(-0.0f)));
    EXPECT_EQ(gelu(3e38f), 3e38f);
    EXPECT_EQ(gelu(-3e38f), 0.0f);
    EXPECT_EQ(gelu(-30.0f), 0.0f);
  }
  EXPECT_GT(-gelu_f32(-13.5f), 0.0f);  // a subnormal (about -1e-40), not flushed
  EXPECT_LT(-gelu_f32(-13.5f), std::numeric_limits<float>::min());
  EXPECT_LE(signed_ulps(gelu_f32(-13.5f), gelu_reference(-13.5f)), 2);
}

// gelu's derivatives in double: the value and the size of its terms (Phi +
// |x phi|, s + |2 x s (1 - s) u'|), which cancel near x = -0.75 where the
// derivative is 0, so that the error is stated in ulps of the terms' size.
struct Derivative {
  double value, size;
};

Derivative gelu_grad_reference(float x) {
  const double v = x, tail = 0.5 * std::erfc(std::fabs(v) * 0.70710678118654752440);
  const double x_phi = v * std::exp(-0.5 * v * v) * 0.39894228040143267794;
  const double cdf = v < 0 ? tail : 1 - tail;
  return {cdf + x_phi, cdf + std::fabs(x_phi)};
}

Derivative gelu_tanh_grad_reference(float x) {
  const double v = x, k = 0.79788456080286535588, c = 0.044715, u = k * (v + c * v * v * v);
  const double s = 1 / (1 + std::exp(-2 * u)), s_neg = 1 / (1 + std::exp(2 * u));
  const double term = 2 * v * s * s_neg * k * (1 + 3 * c * v * v);
  return {s + term, s + std::fabs(term)};
}

// |f(x) - value| in units of f32's ulp at |size| (2^-149 at the least), over
// the grid of sweep(): the largest for |x| <= |near| and everywhere, and where.
template <typename F, typename Reference>
Worst sweep_grad(F f, Reference reference, float near) {
  Worst w;
  for (uint32_t bits = 0; bits < 0x7f800000u; bits += from_bits(bits) < 16.5f ? 2039 : 65521) {
    for (const float x : {from_bits(bits), -from_bits(bits)}) {
      const Derivative r = reference(x);
      int exponent;
      std::frexp(r.size, &exponent);
      const double ulp = std::ldexp(1.0, std::max(exponent - 24, -149));
      const int64_t d = static_cast<int64_t>(std::ceil(std::fabs(double(f(x)) - r.value) / ulp));
      if (d > w.all) w.all = d, w.all_x = x;
      if (std::fabs(x) <= near && d > w.near) w.near = d, w.near_x = x;
    }
  }
  return w;
}

TEST(VmathTest, GeluGradIsWithinItsStatedError) {
  const Worst w = sweep_grad(gelu_grad_f32, gelu_grad_reference, 0);
  EXPECT_LE(w.all, 6) << "at x = " << w.all_x;  // 5 measured, at x = -0.0011
}

// u rounded in f32, as gelu_tanh_f32.
TEST(VmathTest, GeluTanhGradIsWithinItsStatedError) {
  const Worst w = sweep_grad(gelu_tanh_grad_f32, gelu_tanh_grad_reference, 3);
  EXPECT_LE(w.near, 16) << "|x| <= 3, at x = " << w.near_x;   // 12 measured, at x = -2.97
  EXPECT_LE(w.all, 256) << "everywhere, at x = " << w.all_x;  // 164 measured, at x = -10.2
}

TEST(VmathTest, GeluGradOfSpecialValues) {
  constexpr float kInf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  for (auto grad : {gelu_grad_f32, gelu_tanh_grad_f32}) {
    EXPECT_TRUE(std::isnan(grad(kInf)));  // inf * 0, docs/ops.md
    EXPECT_TRUE(std::isnan(grad(-kInf)));
    EXPECT_TRUE(std::isnan(grad(nan)));
    EXPECT_TRUE(std::isnan(grad(-nan)));
    EXPECT_EQ(grad(0.0f), 0.5f);
    EXPECT_EQ(grad(-0.0f), 0.5f);
    EXPECT_EQ(grad(3e38f), 1.0f);
    EXPECT_EQ(grad(-3e38f), 0.0f);
    EXPECT_EQ(grad(30.0f), 1.0f);
    EXPECT_EQ(grad(-30.0f), 0.0f);
    EXPECT_GT(grad(-0.5f), 0.0f);  // either side of the zero near -0.75
    EXPECT_LT(grad(-1.0f), 0.0f);
  }
  // A subnormal, not flushed: about -1.5e-39 at x = -13.5.
  EXPECT_LT(gelu_grad_f32(-13.5f), 0.0f);
  EXPECT_GT(gelu_grad_f32(-13.5f), -std::numeric_limits<float>::min());
}

}  // namespace
}  // namespace oar::cpu
