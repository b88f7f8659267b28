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

}  // namespace oar::conformance
