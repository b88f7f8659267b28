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
  // Explicit values (row-major, NaN/Inf allowed) instead of generated ones,
  // each rounded to the dtype (to nearest even) as it is stored.
  std::vector<double> values;
  // Explicit bit patterns (row-major, the low dtype-size bytes of each): NaN
  // payloads, int64 extremes, values a double cannot carry.
  std::vector<uint64_t> bits;
};

// SplitMix64: tiny, fast and identical on every platform.
class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double unit() { return double(next() >> 11) * 0x1.0p-53; }  // [0, 1)
  double between(double lo, double hi) { return lo + (hi - lo) * unit(); }
  int64_t integer(int64_t lo, int64_t hi) { return lo + int64_t(next() % uint64_t(hi - lo + 1)); }

 private:
  uint64_t state_;
};

// A deterministic seed for |text| (FNV-1a), e.g. a test id plus an input index.
uint64_t seed_of(const std::string& text);

// The host tensor |spec| describes, filled from |seed|.
HostTensor make_input(const InputSpec& spec, uint64_t seed);

// |x| with its last two dimensions swapped (ndim >= 2).
HostTensor transpose_last2(const HostTensor& x);
// |x| with every float tensor converted to f64 (exactly); other dtypes kept.
// The reference run on it gives the result before the output's rounding.
HostTensor widen_to_f64(const HostTensor& x);
// |x| elementwise: floats converted to f64, integers in their own dtype
// (|INT_MIN| clamped to INT_MAX), bool kept: what bounds the rounding error
// of a sum of terms.
HostTensor abs_as_f64(const HostTensor& x);

// "[13, 31]", and the row-major multi-index of flat element |i|.
std::string shape_text(const std::vector<int64_t>& shape);
std::string index_text(const std::vector<int64_t>& shape, int64_t i);

bool is_float(DLDataType dtype);

// The dtypes of the operator set the device claims: f32, i32, i64, bool and
// the narrow integers (i8, u8, i16) always; f16, bf16, f64 when its
// properties list them.
uint32_t claimed_dtype_bits(const oar_device_properties_t& properties);

// Copies |host| to a new tensor on |stream|'s device and waits: contiguous, or
// a transposed (non-contiguous) view when |transposed|.
Tensor upload(Stream& stream, const HostTensor& host, bool transposed = false);
// Copies |tensor| (contiguous) back to the host and waits.
HostTensor download(Stream& stream, const Tensor& tensor);

}  // namespace oar::conformance
