// Test data for the operator and model suites: deterministic pseudo-random
// host tensors in a per-operator safe domain, and moving them to and from the
// device under test (optionally as a non-contiguous, transposed view).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "conformance/reference/reference.h"
#include "oar/oar.hpp"

namespace oar::conformance {

// Where generated values lie. Integer dtypes draw integers in [lo, hi]; bool
// draws 0/1 whatever the domain says.
struct Domain {
  enum class Kind { kUniform, kAwayFromZero, kIntegers };
  Kind kind = Kind::kUniform;
  double lo = -4;
  double hi = 4;
};
// Uniform in [lo, hi] (integers in [lo, hi] for integer dtypes).
Domain uniform(double lo, double hi);
// |x| in [lo, hi] with a random sign (lo > 0): denominators, reciprocals.
Domain away_from_zero(double lo, double hi);
// Integral values in [lo, hi] for every dtype: ties for comparisons and
// arg-reductions, indices, exactly representable cast inputs.
Domain integers(int64_t lo, int64_t hi);

// One input of a test case.
struct InputSpec {
  std::vector<int64_t> shape;  // the logical shape the operator sees
  DLDataType dtype{};
  Domain domain;
  // Upload the transpose (last two dimensions swapped) and hand the operator a
  // transposed view of it: a non-contiguous tensor with the logical shape.
  bool transposed = false;
  // Explicit values (row-major, NaN/Inf allowed) instead of generated ones.
  std::vector<double> values;
};

// A deterministic seed for |text| (FNV-1a), e.g. a test id plus an input index.
uint64_t seed_of(const std::string& text);

// The host tensor |spec| describes, filled from |seed|.
HostTensor make_input(const InputSpec& spec, uint64_t seed);

// |x| with its last two dimensions swapped (ndim >= 2).
HostTensor transpose_last2(const HostTensor& x);
// |x| elementwise converted to f64 with absolute values (floats) or kept
// (integers and bool): what bounds the rounding error of a sum of terms.
HostTensor abs_as_f64(const HostTensor& x);

// "[13, 31]", and the row-major multi-index of flat element |i|.
std::string shape_text(const std::vector<int64_t>& shape);
std::string index_text(const std::vector<int64_t>& shape, int64_t i);

bool is_float(DLDataType dtype);

// The dtypes of the operator set the device claims: f32, i32, i64 and bool
// always; f16, bf16, f64 when its properties list them.
uint32_t claimed_dtype_bits(const oar_device_properties_t& properties);

// Copies |host| to a new tensor on |stream|'s device and waits: contiguous, or
// a transposed (non-contiguous) view when |transposed|.
Tensor upload(Stream& stream, const HostTensor& host, bool transposed = false);
// Copies |tensor| (contiguous) back to the host and waits.
HostTensor download(Stream& stream, const Tensor& tensor);

}  // namespace oar::conformance
