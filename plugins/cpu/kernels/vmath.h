// f32 loops that the compiler vectorizes (check with -fopt-info-vec): an exp
// without a library call, and the row primitives of softmax built on it
// (softmax, log_softmax, attention). std::exp is a call per element that no
// loop around it can vectorize; this one is a polynomial the loop runs on
// whole vector registers.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace oar::cpu {

// e^(x + lo) in f32, the argument given as x and a small part |lo| << 1 that
// f32 could not hold in x (with kExtra; exp_f32 passes none). Cody-Waite
// reduction of x by n ln 2, then lo added to the reduced argument, a degree-7
// polynomial on |r| <= ln 2 / 2, then 2^n built from its exponent bits in two
// factors so that results down to the subnormals are formed. Overflow gives
// +inf, x < -104 gives 0 (e^-104 is below f32's smallest subnormal), NaN gives
// NaN. Without kOverflow, x must not be above 0 (softmax's x - max): the same
// values without the overflow's comparisons.
template <bool kExtra, bool kOverflow = true>
inline float exp_f32_split(float x, float lo) {
  constexpr float kHigh = 88.72283935546875f;  // above it e^x overflows f32
  constexpr float kLow = -104.0f;
  const float clamped = kOverflow && x > kHigh ? kHigh : (x < kLow ? kLow : x);  // NaN stays NaN
  // n = round(x / ln 2) by adding 1.5 * 2^23: the sum's low mantissa bits are n.
  // A NaN takes n = 0 (its bits would make the integer steps overflow); r
  // stays NaN, and so does the result.
  constexpr float kShifter = 12582912.0f;
  float finite = clamped == clamped ? clamped : 0.0f;
  if constexpr (kExtra) {  // n from x + lo, so that |r| stays <= ln 2 / 2
    finite += lo;
    finite = finite == finite ? finite : 0.0f;
    // Where x is already past kLow a large lo (gelu's tail of a huge |x|) must
    // not take n out of [-150, 128]: the result is 0 there anyway, and the
    // exponent's shift below would overflow.
    finite = finite < kLow ? kLow : (finite > kHigh ? kHigh : finite);
  }
  const float shifted = finite * 1.44269504088896341f + kShifter;
  const float n = shifted - kShifter;
  int32_t bits, shifter_bits;
  std::memcpy(&bits, &shifted, sizeof bits);
  std::memcpy(&shifter_bits, &kShifter, sizeof shifter_bits);
  const int32_t ni = bits - shifter_bits;  // in [-150, 128]
  // r = x - n ln 2, ln 2 split in a part exact in f32 times n and the rest.
  float r = (clamped - n * 0.693359375f) - n * -2.12194440e-4f;
  if constexpr (kExtra) r += lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const float e = p * r * r + r + 1.0f;
  // 2^n = 2^(n/2) 2^(n - n/2): both factors are normal f32 for n in [-150, 128].
  const int32_t half = ni / 2;
  const int32_t scale1_bits = (half + 127) << 23, scale2_bits = (ni - half + 127) << 23;
  float scale1, scale2;
  std::memcpy(&scale1, &scale1_bits, sizeof scale1);
  std::memcpy(&scale2, &scale2_bits, sizeof scale2);
  const float result = e * scale1 * scale2;
  if constexpr (!kOverflow) return x < kLow ? 0.0f : result;
  return x > kHigh ? std::numeric_limits<float>::infinity() : (x < kLow ? 0.0f : result);
}

// e^x in f32 within 2 ulp for normal results (vmath_test.cc).
inline float exp_f32(float x) { return exp_f32_split<false>(x, 0.0f); }

// exp_f32(x) for x <= 0 or NaN (x = -0 included), e.g. a score less its
// row's maximum.
inline float exp_nonpositive_f32(float x) { return exp_f32_split<false, false>(x, 0.0f); }

// gelu(x) = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2 in f32, within 6 ulp of the
// correctly rounded result for every f32 x, subnormal results included
// (vmath_test.cc measures it). With a = |x| and Q(a) = erfc(a / sqrt 2) / 2
// (the normal tail, <= 1/2): x Q(a) for x < 0, x (1 - Q(a)) for x >= 0, so
// that the negative tail keeps its relative precision (1 + erf would cancel).
// Q(a) = e^(-a^2/2) t S(t) with t = 2 / (2 + a): S a degree-10 polynomial in
// t - 1/2 (a least-squares fit of relative error, coefficients rounded to f32
// one at a time, each fit again after the lower ones were rounded), good to
// 4 ulp for a in [0, 14.6]; beyond, e^(-a^2/2) x is below half the smallest
// subnormal. -a^2/2 is formed exactly as hi + lo from a = ah + al, ah with
// the 12 leading bits of a (ah^2 exact): a 1-ulp error of a^2 near a = 14
// would be 100 ulp of e^(-a^2/2). gelu(inf) = inf, gelu(-inf) = NaN (-inf *
// 0, docs/ops.md), gelu(+-0) = +-0, NaN gives NaN.
// normal_tail_f32(a) is that Q(a) as ts e, with e = e^(-a^2/2) and ts = t
// S(t), for a >= 0 (or NaN); gelu_f32 and gelu_grad_f32 share it (phi(a) = e
// / sqrt(2 pi)).
struct NormalTail {
  float ts, e;
};
inline NormalTail normal_tail_f32(float a) {
  const float t = 2.0f / (2.0f + a);
  const float u = t - 0.5f;
  float s = -3.803364933e-02f;
  s = s * u + -9.662985802e-03f;
  s = s * u + 9.272720665e-02f;
  s = s * u + -5.586034805e-02f;
  s = s * u + -6.058285385e-02f;
  s = s * u + 1.079163700e-01f;
  s = s * u + -3.855824005e-03f;
  s = s * u + -1.468795091e-01f;
  s = s * u + 5.759656429e-02f;
  s = s * u + 3.314044178e-01f;
  s = s * u + 3.362039924e-01f;
  uint32_t a_bits;
  std::memcpy(&a_bits, &a, sizeof a_bits);
  a_bits &= 0xfffff000u;
  float ah;
  std::memcpy(&ah, &a_bits, sizeof ah);
  const float al = a - ah;  // exact; NaN for a = inf, where hi = -inf decides
  return {t * s, exp_f32_split<true>(-0.5f * (ah * ah), -0.5f * (al * (a + ah)))};
}

inline float gelu_f32(float x) {
  const NormalTail q = normal_tail_f32(std::fabs(x));
  // x < 0: (x t S) e, one rounding where e is subnormal; x >= 0: x (1 - Q).
  return x < 0.0f ? (x * q.ts) * q.e : x * (1.0f - q.ts * q.e);
}

// gelu's derivative Phi(x) + x phi(x), phi(x) = e^(-x^2/2) / sqrt(2 pi), from
// normal_tail_f32 with a = |x|: e (a / sqrt(2 pi) - ts) is Q(a) - a phi(a)
// negated, so x < 0 gives -(that) and x >= 0 gives 1 + that. Near x = -0.75,
// where the derivative is 0, the two terms cancel: vmath_test.cc states the
// error against the formula in double relative to the terms' size.
// x = +-inf gives NaN (inf * 0, docs/ops.md), NaN gives NaN; beyond a = 14.4
// e is 0 and the result 1 or -0.
inline float gelu_grad_f32(float x) {
  const float a = std::fabs(x);
  const NormalTail q = normal_tail_f32(a);
  const float d = (a * 0.3989422804014327f - q.ts) * q.e;
  return x < 0.0f ? -d : 1.0f + d;
}

// gelu's tanh form, 0.5 x (1 + tanh(u)) with u = sqrt(2 / pi) (x + 0.044715
// x^3), as x / (1 + e^(-2u)) (the same value; docs/ops.md's decomposition),
// for u < 0 as x z / (1 + z) with z = e^(2u), which underflows gradually
// where e^(-2u) would overflow. u is rounded in f32, an error that e^(2u)
// multiplies by |2u|: vmath_test.cc states the error against the formula in
// double. gelu(inf) = inf, gelu(-inf) = NaN (-inf * 0), NaN gives NaN.
inline float gelu_tanh_f32(float x) {
  const float u = 0.7978845608028654f * (x + 0.044715f * (x * x * x));
  const float z = exp_f32(-2.0f * std::fabs(u));
  return (u < 0.0f ? x * z : x) / (1.0f + z);
}

// gelu_tanh_f32's derivative s + 2 x s (1 - s) u' with s = sigmoid(2u) and
// u' = sqrt(2 / pi) (1 + 3 0.044715 x^2): with z = e^(-2|u|) and r = 1 / (1 +
// z), s is r (u >= 0) or z r (u < 0) and s (1 - s) = z r^2. Where z r^2 is 0
// the term is x 0 (docs/ops.md), so an overflowing u' never gives 0 inf and
// x = +-inf gives NaN; NaN gives NaN.
inline float gelu_tanh_grad_f32(float x) {
  constexpr float k = 0.7978845608028654f, c = 0.044715f;
  const float x2 = x * x;
  const float u = k * (x + c * (x2 * x));
  const float z = exp_f32(-2.0f * std::fabs(u));
  const float r = 1.0f / (1.0f + z);
  const float s = u < 0.0f ? z * r : r;
  const float w = z * r * r;
  const float term = w == 0.0f ? x * 0.0f : (2.0f * k) * (x * (1.0f + (3.0f * c) * x2)) * w;
  return s + term;
}

// The largest of x[0..n) (n > 0); NaN if any is NaN.
inline float row_max_f32(const float* x, int64_t n) {
  float max = -std::numeric_limits<float>::infinity();
  int nan = 0;
#pragma omp simd reduction(max : max) reduction(| : nan)
  for (int64_t j = 0; j < n; ++j) {
    max = x[j] > max ? x[j] : max;
    nan |= x[j] != x[j];
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : max;
}

// Sums of exps are taken in f32 over blocks of kExpBlock elements (a few
// terms per vector lane, so a block's sum is within a few f32 roundings) and
// the blocks' sums in double: a double accumulator per element would make
// the loop wait on the addition's latency.
inline constexpr int64_t kExpBlock = 64;

// y[j] = e^(x[j] - shift) for j < n (|y| may be |x|); returns their sum.
inline double exp_shifted_f32(const float* x, float* y, int64_t n, float shift) {
  double sum = 0;
  for (int64_t begin = 0; begin < n; begin += kExpBlock) {
    const int64_t end = begin + kExpBlock < n ? begin + kExpBlock : n;
    float block = 0;
#pragma omp simd reduction(+ : block)
    for (int64_t j = begin; j < end; ++j) {
      const float e = exp_f32(x[j] - shift);
      y[j] = e;
      block += e;
    }
    sum += double(block);
  }
  return sum;
}

// The sum of e^(x[j] - shift) for j < n.
inline double exp_shifted_sum_f32(const float* x, int64_t n, float shift) {
  double sum = 0;
  for (int64_t begin = 0; begin < n; begin += kExpBlock) {
    const int64_t end = begin + kExpBlock < n ? begin + kExpBlock : n;
    float block = 0;
#pragma omp simd reduction(+ : block)
    for (int64_t j = begin; j < end; ++j) block += exp_f32(x[j] - shift);
    sum += double(block);
  }
  return sum;
}

// softmax (or log_softmax with |log|) of the contiguous f32 row x[0..n) into
// y (|y| may be |x|): the maximum is subtracted before exp, the sum is taken
// in double, one multiplication (softmax) or subtraction (log_softmax) per
// element at the end.
inline void softmax_row_f32(const float* x, float* y, int64_t n, bool log) {
  if (n == 0) return;
  const float max = row_max_f32(x, n);
  if (log) {
    const double log_sum = std::log(exp_shifted_sum_f32(x, n, max));
#pragma omp simd
    for (int64_t j = 0; j < n; ++j) y[j] = float(double(x[j] - max) - log_sum);
    return;
  }
  const float scale = float(1 / exp_shifted_f32(x, y, n, max));
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) y[j] *= scale;
}

}  // namespace oar::cpu

namespace oar::cpu {

// exp_shifted_f32 and exp_shifted_sum_f32 for wide vectors: each of
// kSumLanes lanes sums at most kLaneTerms exps in f32, and the lanes' sums
// are added into kSumLanes double lanes (a vector conversion, not a
// horizontal sum per block), summed once at the end. With AVX-512 the block
// sums above cost 16 dependent scalar additions every 64 elements.
inline constexpr int64_t kSumLanes = 16;
inline constexpr int64_t kLaneTerms = 8;

template <bool kStore>
inline double exp_shifted_lanes_f32(const float* x, float* y, int64_t n, float shift) {
  double total[kSumLanes] = {};
  int64_t j = 0;
  while (n - j >= kSumLanes) {
    float part[kSumLanes] = {};
    const int64_t terms = (n - j) / kSumLanes < kLaneTerms ? (n - j) / kSumLanes : kLaneTerms;
    const int64_t end = j + terms * kSumLanes;
    for (; j < end; j += kSumLanes) {
#pragma omp simd
      for (int64_t l = 0; l < kSumLanes; ++l) {
        const float e = exp_f32(x[j + l] - shift);
        if constexpr (kStore) y[j + l] = e;
        part[l] += e;
      }
    }
#pragma omp simd
    for (int64_t l = 0; l < kSumLanes; ++l) total[l] += double(part[l]);
  }
  double sum = 0;
  for (int64_t l = 0; l < kSumLanes; ++l) sum += total[l];
  for (; j < n; ++j) {
    const float e = exp_f32(x[j] - shift);
    if constexpr (kStore) y[j] = e;
    sum += double(e);
  }
  return sum;
}

}  // namespace oar::cpu
