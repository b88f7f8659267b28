// Comparing a device's results with the reference's, with the per-dtype and
// per-family tolerances documented in docs/conformance.md ("Suites and
// tolerances"). An element passes when
//
//   |got - expected| <= atol + rtol * |expected| + acc * magnitude
//
// where |magnitude| is, for sums of terms (sum, mean, matmul, conv2d), the
// same computation over the terms' absolute values: the bound on rounding
// error that a sum of terms can carry, whatever cancellation it has. NaN must
// meet NaN and infinities must match exactly; integers and bool are exact.
#pragma once

#include <cstdint>
#include <string>

#include "conformance/reference/reference.h"

namespace oar::conformance {

// How an operator's results may differ from the exactly rounded ones.
enum class Family {
  kExact,           // moves, selects, compares, casts, max/min: bit exact
  kArith,           // one correctly rounded operation: add, sub, mul, div, sqrt, ...
  kTranscendental,  // exp, log, sin, tanh, erf, gelu, pow, ...: a few ulp
  kAccumulate,      // sums of terms (sum, mean, matmul, conv2d): scaled by magnitude
  kProduct,         // products of K factors: rtol grows with sqrt(K)
  kNormalized,      // softmax, norms, pooling, attention, rotary, cross_entropy
  kModel,           // a chain of operators (the model suite)
};

const char* family_name(Family family);

struct Tolerance {
  double rtol = 0;
  double atol = 0;
  double acc = 0;  // times the magnitude (kAccumulate only)
  std::string text() const;
};

// The tolerance for |dtype| (of the compared output) in |family|; |k| is the
// number of factors for kProduct. Integers and bool are always exact.
Tolerance tolerance_for(DLDataType dtype, Family family, int64_t k = 1);

// Throws TestFailure naming |what| (the op, dtype and case), the output, the
// first mismatching element, got vs expected, the tolerance and how many
// elements fail, if |got| differs from |expected| beyond |tolerance|.
// |magnitude| (f64, expected's shape) may be null.
void expect_close(const std::string& what, size_t output, const HostTensor& got,
                  const HostTensor& expected, const Tolerance& tolerance,
                  const HostTensor* magnitude = nullptr);

// --- Numerics beyond a tolerance (docs/conformance.md, "Numerics") ----------

// Whether a device may flush subnormals of |dtype| to zero (docs/ops.md,
// "Subnormals"): f32 and bf16 may (inputs read as zero, results written as
// zero); f16 and f64 may not.
bool may_flush_subnormals(DLDataType dtype);
// The smallest positive normal value of a float dtype.
double smallest_normal(DLDataType dtype);
// |x| rounded to nearest (ties to even) in a float |dtype|, as a double.
double round_to_dtype(DLDataType dtype, double x);
// The neighbour of |r| (finite and representable in float |dtype|) one step
// toward +inf (|up|) or -inf; may be infinite.
double next_in_dtype(DLDataType dtype, double r, bool up);

// |family|'s tolerance for |dtype| with the absolute term cut to the dtype's
// resolution near zero: one step of the subnormal grid for f16 and f64, the
// smallest normal for f32 and bf16 (which may flush). For results whose
// smallness is the point of the test (exp near underflow, subnormals).
Tolerance relative_tolerance(DLDataType dtype, Family family);

// Throws TestFailure unless every element of |got| has the bits of
// |expected|'s (the same dtype): the one correctly rounded result, the sign
// of zero included. Any NaN matches any NaN. Where |dtype| may flush
// subnormals, a zero of either sign matches an expected subnormal.
void expect_bits(const std::string& what, size_t output, const HostTensor& got,
                 const HostTensor& expected);

// The mean rounding error of |got| (a float dtype) in units of the spacing of
// its dtype at |exact| (f64, the result before the output's rounding), over
// the elements whose exact value is finite, at least |min_magnitude| in size
// and not representable in the dtype. Correct rounding to nearest errs by at
// most half a spacing either way, and both signs are equally likely; a
// rounding by truncation errs by -0.5 on average toward zero.
struct RoundingBias {
  int64_t count = 0;       // elements measured
  double signed_mean = 0;  // mean of (got - exact) / spacing, each clipped to [-1, 1]
  double away_mean = 0;    // the same with the sign of exact: < 0 means toward zero
  double limit = 0;        // what each mean may reach: kBiasAllowance + 2 / sqrt(count)
};
RoundingBias rounding_bias(const HostTensor& got, const HostTensor& exact, double min_magnitude);
// The part of the limit that does not shrink with the count (see compare.cc).
inline constexpr double kBiasAllowance = 0.05;

// Throws TestFailure naming |what| if the rounding bias of |got| against
// |exact| exceeds its limit in either mean, or (a suite problem) fewer than
// |min_count| elements could be measured.
void expect_unbiased(const std::string& what, size_t output, const HostTensor& got,
                     const HostTensor& exact, double min_magnitude, int64_t min_count);

}  // namespace oar::conformance
