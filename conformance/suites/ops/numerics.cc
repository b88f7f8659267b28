// Numerics that a per-element tolerance cannot see (docs/conformance.md,
// "Numerics"). A device that rounds every f16 result toward zero stays within
// a 1e-3 relative tolerance; one that flushes f16 subnormals stays within an
// absolute one; a one-pass variance is within tolerance on centred data. Each
// test here holds one promise of docs/ops.md to a check that sees it:
//
//   correctly_rounded_*  exact bits where docs/ops.md promises one correctly
//                        rounded result (casts, add/sub/mul, and the f16/bf16
//                        arithmetic): ties, overflow, subnormals, NaN, zeros
//   rounding_unbiased    the mean rounding error over many inexact results of
//                        every float operator in f16/bf16 (and f32 add/sub/mul)
//   near_overflow, near_underflow, extreme_arguments, negative_tail, subnormals_kept
//                        relative tolerances where the size of the result is
//                        the point: exp, log, sigmoid near the ends of the range
//   large_common_offset  normalizations of rows with a large common offset,
//                        with the tolerance their conditioning allows a stable
//                        algorithm (which a one-pass variance exceeds)
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "conformance/harness/test.h"
#include "conformance/suites/ops/op_cases.h"

namespace oar::conformance {
namespace {

using Shape = std::vector<int64_t>;
const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

enum class Check {
  kBits,         // every element the correctly rounded result (expect_bits)
  kUnbiased,     // the family's tolerance, then no rounding bias (expect_unbiased)
  kRelative,     // the family's tolerance with atol at the dtype's resolution
  kConditioned,  // the family's tolerance plus |extra_atol| (the inputs' conditioning)
};

struct NumericsCase {
  std::string name;
  OpCase call;
  Check check = Check::kBits;
  double min_magnitude = 0;  // kUnbiased: results smaller than this are not measured
  int64_t min_count = 1000;  // kUnbiased: at least this many inexact results
  double extra_atol = 0;     // kConditioned
};

bool in_set(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

InputSpec generated(Shape shape, DLDataType dt, Domain domain) {
  InputSpec s;
  s.shape = std::move(shape);
  s.dtype = dt;
  s.domain = domain;
  return s;
}
InputSpec listed(DLDataType dt, std::vector<double> values) {
  InputSpec s;
  s.shape = {int64_t(values.size())};
  s.dtype = dt;
  s.values = std::move(values);
  return s;
}
InputSpec raw(DLDataType dt, std::vector<uint64_t> bits) {
  InputSpec s;
  s.shape = {int64_t(bits.size())};
  s.dtype = dt;
  s.bits = std::move(bits);
  return s;
}

NumericsCase make(std::string name, std::vector<InputSpec> inputs, Check check,
                  std::vector<AttrValue> attrs = {}) {
  NumericsCase n;
  n.name = std::move(name);
  n.call.name = n.name;
  n.call.inputs = std::move(inputs);
  n.call.attrs = std::move(attrs);
  n.check = check;
  return n;
}

// --- Formats -----------------------------------------------------------------

int precision_of(DLDataType dt) {
  if (dt == dtype::f16) return 11;
  if (dt == dtype::bf16) return 8;
  if (dt == dtype::f32) return 24;
  return 53;
}
double largest_of(DLDataType dt) {
  if (dt == dtype::f16) return 65504;
  if (dt == dtype::bf16) return std::ldexp(255.0, 120);
  if (dt == dtype::f32) return double(std::numeric_limits<float>::max());
  return std::numeric_limits<double>::max();
}
// Half the spacing of |dt| just below its largest value: max + this is the
// tie that rounds to infinity.
double half_top_spacing(DLDataType dt) {
  const double max = largest_of(dt);
  return (max - next_in_dtype(dt, max, false)) / 2;
}
// A random value of |dt| with a full mantissa, in [2^e, 2^(e+1)).
double full_mantissa(Random& random, DLDataType dt, int e) {
  const int p = precision_of(dt);
  const int64_t top = int64_t(1) << (p - 1);
  return std::ldexp(double(random.integer(top, 2 * top - 1)), e - p + 1);
}
bool representable(DLDataType dt, double v) { return round_to_dtype(dt, v) == v; }

// Where |exact| lies between its two neighbours in |dt|: 0 on the lower, 0.5
// at the tie; -1 when it is representable or outside the finite range.
double position(DLDataType dt, double exact) {
  const double r = round_to_dtype(dt, exact);
  if (r == exact || !std::isfinite(r) || !std::isfinite(exact)) return -1;
  const double lo = r > exact ? next_in_dtype(dt, r, false) : r;
  const double hi = r > exact ? r : next_in_dtype(dt, r, true);
  return (exact - lo) / (hi - lo);
}

// --- Correctly rounded arithmetic ------------------------------------------------

double apply(const std::string& op, double a, double b) {
  if (op == "add") return a + b;
  if (op == "sub") return a - b;
  if (op == "mul") return a * b;
  if (op == "div") return a / b;
  if (op == "sqrt") return std::sqrt(a);
  if (op == "rsqrt") return 1 / std::sqrt(a);
  return 1 / a;  // reciprocal
}

// Operands whose exact results fall between two values of |dt|: for add, sub
// and mul half of them exactly on the tie (half of those with an odd lower
// neighbour, so ties-to-even and ties-away differ), the rest above or below
// it; for div and the unary operators (whose results are never ties) results
// at least 2% of a spacing away from the tie on either side, which a kernel
// computing in f32 within a few ulp rounds correctly.
void add_random_operands(const std::string& op, DLDataType dt, Random& random, int count,
                         std::vector<double>& a, std::vector<double>& b) {
  const bool unary = in_set(op, {"sqrt", "rsqrt", "reciprocal"});
  const bool ties = in_set(op, {"add", "sub", "mul"});
  const int p = precision_of(dt);
  int wanted[3] = {ties ? count / 2 : 0, ties ? count / 4 : count / 2,
                   ties ? count / 4 : count / 2};
  for (int attempt = 0; attempt < 200 * count && (wanted[0] + wanted[1] + wanted[2]) > 0;
       ++attempt) {
    const int e = int(random.integer(-4, 4));
    double x = full_mantissa(random, dt, e);
    double y = 1;
    if (!unary) {
      // Few significant bits: the exact result lands on a coarse grid of
      // fractions of a spacing, ties included.
      const int bits = int(random.integer(1, 3));
      const double m = double(random.integer(int64_t(1) << (bits - 1), (int64_t(1) << bits) - 1));
      const int shift = op == "mul" || op == "div" ? int(random.integer(-2, 2))
                                                   : e - p - int(random.integer(-1, p / 2));
      y = std::ldexp(m, shift);
      if (random.next() & 1) y = -y;
    }
    if (random.next() & 1) x = unary ? x : -x;
    const double exact = apply(op, x, y);
    const double at = position(dt, exact);
    if (at < 0) continue;
    int kind;
    if (at == 0.5) {
      kind = 0;
    } else if (!ties && std::fabs(at - 0.5) < 0.02) {
      continue;
    } else {
      kind = at < 0.5 ? 1 : 2;
    }
    if (wanted[kind] == 0) continue;
    --wanted[kind];
    a.push_back(x);
    b.push_back(y);
  }
}

// Signed zeros, NaN and infinities, overflow at the largest value, and (f16,
// whose subnormals are kept) results and operands in the subnormal range.
void add_special_operands(const std::string& op, DLDataType dt, std::vector<double>& a,
                          std::vector<double>& b) {
  const double max = largest_of(dt), half = half_top_spacing(dt);
  const bool f16 = dt == dtype::f16;
  const double s = 0x1p-24;  // f16's smallest subnormal
  auto pair = [&](double x, double y) {
    a.push_back(x);
    b.push_back(y);
  };
  if (op == "add") {
    pair(-0.0, -0.0), pair(1, -1), pair(-0.0, 0.0), pair(kNaN, 1), pair(kInf, -kInf);
    pair(kInf, 1), pair(max, half), pair(max, half / 2), pair(-max, -half);
    if (f16) pair(3 * s, 5 * s), pair(0x1p-14, -s), pair(-7 * s, 2 * s);
  } else if (op == "sub") {
    pair(2.5, 2.5), pair(-0.0, 0.0), pair(kInf, kInf), pair(max, -half), pair(-max, half / 2);
    if (f16) pair(0x1p-14, s), pair(5 * s, 8 * s);
  } else if (op == "mul") {
    pair(-1, 0.0), pair(-0.0, -0.0), pair(0.0, kInf), pair(kNaN, 0.0), pair(-kInf, 2);
    pair(std::sqrt(max) * 2, std::sqrt(max) * 2);
    if (f16) {
      pair(256, 256);                                           // 65536: inf
      pair(3 * 0x1p-13, 0x1p-12), pair(-3 * 0x1p-13, 0x1p-12);  // 1.5 subnormal steps: tie to 2
      pair(5 * 0x1p-14, 0x1p-12), pair(7 * 0x1p-14, 0x1p-12);   // 1.25 and 1.75 steps
      pair(0x1p-13, 0x1p-12), pair(-0x1p-13, 0x1p-12);          // half a step: tie to +-0
      pair(0x1p-7, 0x1p-7), pair(s, 1024), pair(1000 * s, 0.5);
    }
  } else if (op == "div") {
    pair(1, 0.0), pair(-1, 0.0), pair(1, -0.0), pair(0.0, 0.0), pair(kInf, kInf), pair(0.0, -3);
    pair(kInf, -2);
    if (f16) pair(1, 0x1p-16), pair(0x1p-14, 4), pair(3 * 0x1p-14, 8), pair(5 * s, 2);
  } else if (op == "sqrt") {
    for (double v : {-0.0, 0.0, -1.0, kInf, kNaN}) pair(v, 1);
    if (f16) pair(s, 1), pair(4 * s, 1), pair(9 * s, 1);
  } else if (op == "rsqrt") {
    for (double v : {0.0, -0.0, kInf, -1.0, kNaN}) pair(v, 1);
    if (f16) pair(s, 1), pair(4 * s, 1);
  } else {  // reciprocal
    for (double v : {0.0, -0.0, kInf, -kInf, kNaN}) pair(v, 1);
    if (f16) pair(65504, 1), pair(s, 1), pair(0x1p-14, 1), pair(-4 * s, 1);
  }
}

NumericsCase correctly_rounded_arith(const std::string& op, DLDataType dt) {
  Random random(seed_of("correctly_rounded/" + op + "/" + dtype_name(dt)));
  std::vector<double> a, b;
  add_random_operands(op, dt, random, 512, a, b);
  add_special_operands(op, dt, a, b);
  const bool unary = in_set(op, {"sqrt", "rsqrt", "reciprocal"});
  std::vector<InputSpec> in = {listed(dt, a)};
  if (!unary) in.push_back(listed(dt, b));
  return make(in_set(op, {"add", "sub", "mul"}) ? "correctly_rounded_ties"
                                                : "correctly_rounded_known_values",
              std::move(in), Check::kBits);
}

// --- Casts -------------------------------------------------------------------------

bool is_int(DLDataType dt) { return dt == dtype::i32 || dt == dtype::i64; }

// Values of float |from| that |to| (a narrower float) must round: ties with
// both parities, just off the ties, quarter spacings, values that rounding
// through f32 would round twice, the overflow boundary and f16's subnormals.
std::vector<double> narrowing_values(DLDataType from, DLDataType to, Random& random) {
  std::vector<double> v;
  auto keep = [&](double x) {
    if (representable(from, x)) v.push_back(x);
  };
  const int p_from = precision_of(from);
  for (int i = 0; i < 96; ++i) {
    const int e = int(random.integer(-6, 6));
    const double lo = full_mantissa(random, to, e);
    const double spacing = next_in_dtype(to, lo, true) - lo;
    const double step = std::ldexp(spacing, -(p_from - precision_of(to)));  // |from|'s spacing
    const double sign = (random.next() & 1) ? -1.0 : 1.0;
    keep(sign * (lo + spacing / 2));
    keep(sign * (lo + spacing / 2 + step));
    keep(sign * (lo + spacing / 2 - step));
    keep(sign * (lo + spacing / 4));
    keep(sign * (lo + 3 * spacing / 4));
    if (from == dtype::f64 && to != dtype::f32) {
      // Above (below) the tie by less than half an f32 spacing: through f32
      // it becomes the tie and rounds to even, directly it rounds up (down).
      keep(sign * (lo + spacing / 2 + spacing * 0x1p-20));
      keep(sign * (lo + spacing / 2 - spacing * 0x1p-20));
    }
  }
  const double max = largest_of(to), half = half_top_spacing(to);
  if (largest_of(from) > max) {
    for (double sign : {1.0, -1.0}) {
      keep(sign * (max + half));                            // the tie above the largest value: inf
      keep(sign * next_in_dtype(from, max + half, false));  // just below it: the largest value
      keep(sign * (max + half / 2));
      keep(sign * 2 * max);
    }
  }
  if (to == dtype::f16) {
    const double s = 0x1p-24;
    for (double k : {0.5, 1.5, 2.5, 3.5, 1.25, 1.75, 1023.5, 1022.5, 700.25}) keep(k * s);
    for (int i = 0; i < 24; ++i) keep(-(double(random.integer(0, 1023)) + 0.5) * s);
    keep(0x1p-14 - s / 2);  // the tie between the largest subnormal and the smallest normal
  }
  for (double x : {0.0, -0.0, 1.0, -1.0, 0.5, kInf, -kInf}) keep(x);
  return v;
}

// Bit patterns of NaNs of |dt| whose payload a careless narrowing loses:
// payloads only in the low bits (truncation makes them infinities) and all
// ones (a rounding carry runs into the sign).
std::vector<uint64_t> nan_bits(DLDataType dt) {
  if (dt == dtype::f16) return {0x7e00, 0xfe00, 0x7c01, 0xfc01, 0x7fff};
  if (dt == dtype::bf16) return {0x7fc0, 0xffc0, 0x7f81, 0xff81, 0x7fff};
  if (dt == dtype::f32) {
    return {0x7fc00000, 0xffc00000, 0x7f800001, 0xff800001, 0x7fffffff, 0x7f80ffff, 0x7fbfffff};
  }
  return {0x7ff8000000000000ull, 0xfff8000000000000ull, 0x7ff0000000000001ull,
          0x7ff0000000001000ull, 0x7fffffffffffffffull, 0xfff0000000000001ull};
}

uint64_t bits_of(DLDataType dt, double v) {
  HostTensor t = HostTensor::zeros({1}, dt);
  t.set(0, v);
  uint64_t bits = 0;
  std::memcpy(&bits, t.bytes.data(), t.bytes.size());
  return bits;
}

InputSpec float_source(DLDataType from, const std::vector<double>& values) {
  std::vector<uint64_t> bits;
  for (double v : values) bits.push_back(bits_of(from, v));
  for (uint64_t n : nan_bits(from)) bits.push_back(n);
  return raw(from, std::move(bits));
}

uint64_t two(int64_t v) { return uint64_t(v); }

std::vector<uint64_t> int_to_float_values(DLDataType from, DLDataType to) {
  const int p = precision_of(to);
  std::vector<int64_t> v = {0, 1, -1, 7, -100, INT32_MAX, INT32_MIN};
  // Ties and their neighbours where the spacing of |to| is 2.
  const int64_t base = int64_t(1) << p;
  for (int64_t k : {1, 3, 5, 7, 101, 203}) {
    v.push_back(base + k), v.push_back(-(base + k)), v.push_back(base + k + 1);
  }
  if (to == dtype::f16) {
    for (int64_t k : {65504, 65519, 65520, 65535, 65536, 70000, -65520, -65519}) v.push_back(k);
  }
  if (from == dtype::i64) {
    v.push_back(INT64_MAX), v.push_back(INT64_MIN), v.push_back(INT64_MIN + 1);
    // Just above a tie of |to| by less than a double's spacing: rounded
    // through f64 it becomes the tie (and rounds to even, down), directly it
    // rounds up.
    const int64_t top = int64_t(1) << 62;
    const int64_t tie = top + (int64_t(1) << (62 - p));
    if (to != dtype::f64) v.push_back(tie + 1), v.push_back(-(tie + 1)), v.push_back(tie - 1);
  }
  if (p < 30) {
    // Just above a tie of |to| by less than an f32 spacing: rounded through
    // f32 it becomes the tie, directly it rounds up.
    const int64_t t30 = (int64_t(1) << 30) + (int64_t(1) << (30 - p)) + 1;
    v.push_back(t30), v.push_back(-t30), v.push_back(t30 - 2);
  }
  std::vector<uint64_t> bits;
  for (int64_t x : v) {
    if (from == dtype::i32 && (x > INT32_MAX || x < INT32_MIN)) continue;
    bits.push_back(from == dtype::i32 ? uint64_t(uint32_t(int32_t(x))) : two(x));
  }
  return bits;
}

// float -> int: truncation toward zero, for values in range (NaN, inf and
// out-of-range values are unspecified, so none appear).
std::vector<double> float_to_int_values(DLDataType from, DLDataType to) {
  std::vector<double> v = {0.5,  -0.5, 1.5,   -1.5,  2.5,    -2.5, 0.9990234375, -0.9990234375,
                           -0.0, 7.75, -7.75, 100.5, -100.5, 3.0,  -3.0};
  if (from != dtype::bf16) v.push_back(1001.5), v.push_back(-1001.5);
  if (from == dtype::f16) v.push_back(65504), v.push_back(-65504);
  if (from == dtype::f32 || from == dtype::f64) {
    v.push_back(1073741888.0), v.push_back(-2147483648.0);  // 2^30 + 64, INT32_MIN
  }
  if (from == dtype::f64 && to == dtype::i32) {
    v.push_back(2147483647.75), v.push_back(-2147483648.75);
  }
  if (to == dtype::i64 && from != dtype::f16) {
    v.push_back(0x1p62), v.push_back(-0x1p63), v.push_back(-0x1.8p40);
  }
  std::vector<double> kept;
  for (double x : v) {
    if (representable(from, x)) kept.push_back(x);
  }
  return kept;
}

std::vector<NumericsCase> cast_known_values(DLDataType from, uint32_t claimed) {
  std::vector<NumericsCase> cases;
  Random random(seed_of("cast/" + dtype_name(from)));
  for (DLDataType to : ops::dtypes_in(claimed)) {
    if (to == from) continue;
    InputSpec source;
    if (is_float(from) && is_float(to)) {
      std::vector<double> values;
      if (precision_of(to) < precision_of(from) || largest_of(to) < largest_of(from)) {
        values = narrowing_values(from, to, random);
      }
      for (int i = 0; i < 64; ++i) {  // widening: exact
        values.push_back(full_mantissa(random, from, int(random.integer(-8, 8))));
      }
      for (double x : {0.0, -0.0, kInf, -kInf, largest_of(from), -largest_of(from)}) {
        values.push_back(x);
      }
      if (from == dtype::f16) {
        for (double k : {1.0, 3.0, 1023.0, 517.0}) values.push_back(-k * 0x1p-24);
      }
      source = float_source(from, values);
    } else if (is_int(from) && is_float(to)) {
      source = raw(from, int_to_float_values(from, to));
    } else if (is_float(from) && is_int(to)) {
      source = listed(from, float_to_int_values(from, to));
    } else if (to == dtype::boolean) {
      if (is_float(from)) {
        std::vector<double> values = {kNaN, -0.0, 0.0, kInf, -kInf, 0.5, -1.0};
        values.push_back(from == dtype::f16 ? 0x1p-24 : 0x1p-100);  // kept subnormal / tiny normal
        source = listed(from, values);
      } else {
        std::vector<uint64_t> bits = {0, 1, two(-1), 256, 65536, 0x80000000ull};
        if (from == dtype::i64) {
          for (uint64_t b : std::vector<uint64_t>{0x100000000ull, 0x10000000000ull, two(INT64_MIN),
                                                  two(INT64_MAX)}) {
            bits.push_back(b);
          }
        }
        for (uint64_t& b : bits) b = from == dtype::i32 ? uint64_t(uint32_t(b)) : b;
        source = raw(from, bits);
      }
    } else if (is_int(from) && is_int(to)) {
      std::vector<uint64_t> bits = {0, 1, two(-1), two(INT32_MIN), two(INT32_MAX)};
      if (from == dtype::i64) {
        for (int64_t b : {(int64_t(1) << 32) + 5, int64_t(1) << 31, int64_t(INT32_MIN) - 1,
                          INT64_MIN, INT64_MAX}) {
          bits.push_back(two(b));
        }
      }
      for (uint64_t& b : bits) b = from == dtype::i32 ? uint64_t(uint32_t(b)) : b;
      source = raw(from, bits);
    } else {
      continue;  // bool sources: 0 and 1, exact in every dtype (op_cases.cc covers them)
    }
    NumericsCase c = make("to_" + dtype_name(to) + "_correctly_rounded", {source}, Check::kBits);
    c.call.out_dtype = to;
    cases.push_back(std::move(c));
  }
  return cases;
}

// --- Rounding bias ---------------------------------------------------------------

// A case of |op| with many outputs whose exact values are well away from zero
// and from cancellation, so that every output is one rounding of a value the
// device computes far more accurately than the spacing of f16/bf16.
bool unbiased_case(const std::string& op, DLDataType dt, NumericsCase& out) {
  const Shape flat = {65536};
  auto g = [&](Shape shape, Domain d) { return generated(std::move(shape), dt, d); };
  std::vector<InputSpec> in;
  std::vector<AttrValue> attrs;
  double min_magnitude = 0;
  if (in_set(op, {"exp", "sin", "cos", "tanh", "sigmoid", "silu", "erf", "gelu"})) {
    in = {g(flat, uniform(-4, 4))};
  } else if (in_set(op, {"log", "sqrt", "rsqrt"})) {
    in = {g(flat, uniform(0.05, 8))};
  } else if (op == "reciprocal") {
    in = {g(flat, away_from_zero(0.25, 4))};
  } else if (in_set(op, {"add", "sub", "mul"})) {
    in = {g(flat, uniform(-8, 8)), g(flat, uniform(-8, 8))};
  } else if (op == "div") {
    in = {g(flat, uniform(-4, 4)), g(flat, away_from_zero(0.5, 4))};
  } else if (op == "pow") {
    in = {g(flat, uniform(0.25, 3)), g(flat, uniform(-2, 2))};
  } else if (in_set(op, {"sum", "mean"})) {
    in = {g({8192, 7}, uniform(0.5, 2))};
    attrs = {attr("axes", Shape{-1})};
  } else if (op == "prod") {
    in = {g({8192, 3}, uniform(0.5, 2))};
    attrs = {attr("axes", Shape{-1})};
  } else if (op == "matmul") {
    in = {g({128, 16}, uniform(0, 1)), g({16, 128}, uniform(0, 1))};
  } else if (op == "conv2d") {
    in = {g({1, 4, 34, 34}, uniform(0, 1)), g({16, 4, 3, 3}, uniform(0, 1))};
  } else if (in_set(op, {"softmax", "log_softmax"})) {
    in = {g({2048, 8}, uniform(-2, 2))};
  } else if (in_set(op, {"layer_norm", "rms_norm"})) {
    in = {g({2048, 8}, uniform(-3, 3)), g({8}, uniform(0.5, 1.5))};
    if (op == "layer_norm") in.push_back(g({8}, uniform(-1, 1)));
    min_magnitude = 1.0 / 16;
  } else if (op == "batch_norm") {
    in = {g({16, 8, 16, 8}, uniform(-3, 3)), g({8}, uniform(-1, 1)), g({8}, uniform(0.2, 2)),
          g({8}, uniform(0.5, 1.5)), g({8}, uniform(-1, 1))};
    min_magnitude = 1.0 / 16;
  } else if (op == "avg_pool2d") {
    in = {g({4, 4, 32, 32}, uniform(0, 4))};
    attrs = {attr("kernel_size", Shape{3, 3}), attr("stride", Shape{1, 1}),
             attr("padding", Shape{1, 1})};
  } else if (op == "scaled_dot_product_attention") {
    in = {g({4, 4, 32, 32}, uniform(-1, 1)), g({4, 4, 32, 32}, uniform(-1, 1)),
          g({4, 4, 32, 32}, uniform(0.5, 1.5))};
    min_magnitude = 1.0 / 16;
  } else if (op == "rotary_embedding") {
    in = {g({8, 64, 32}, uniform(-2, 2)), g({64, 16}, uniform(-1, 1)), g({64, 16}, uniform(-1, 1))};
    min_magnitude = 1.0 / 16;
  } else if (op == "cross_entropy") {
    InputSpec target = generated({16384}, dtype::i64, integers(0, 4));
    in = {g({16384, 5}, uniform(-4, 4)), target};
    attrs = {attr("reduction", "none")};
  } else {
    return false;  // exact operators (moves, compares, max/min, floor): nothing is rounded
  }
  out = make("rounding_unbiased", std::move(in), Check::kUnbiased, std::move(attrs));
  out.min_magnitude = min_magnitude;
  return true;
}

// --- Ends of the range ---------------------------------------------------------------

std::vector<double> spread(Random& random, DLDataType dt, double lo, double hi, int count) {
  std::vector<double> v;
  for (int i = 0; i < count; ++i) v.push_back(round_to_dtype(dt, random.between(lo, hi)));
  return v;
}

std::vector<NumericsCase> range_end_cases(const std::string& op, DLDataType dt) {
  std::vector<NumericsCase> cases;
  Random random(seed_of("range/" + op + "/" + dtype_name(dt)));
  const bool f16 = dt == dtype::f16, f64 = dt == dtype::f64;
  const double s16 = 0x1p-24;
  if (op == "exp") {
    // Results up to the largest value (and past it: inf), kept clear of the
    // overflow threshold by more than the tolerance.
    const double top = std::log(largest_of(dt));
    std::vector<double> high = spread(random, dt, f16 ? 8 : f64 ? 690 : 80, top - 0.01, 1024);
    for (double x : {top - 0.01, top + 0.01, top + 1, 2 * top}) high.push_back(x);
    cases.push_back(make("near_overflow", {listed(dt, high)}, Check::kRelative));
    // Results down to the smallest normal and, in f16 and f64 (which keep
    // subnormals), through the subnormals to zero.
    const double bottom = std::log(smallest_normal(dt));
    std::vector<double> low = spread(random, dt, bottom + 0.01, bottom + 12, 1024);
    if (f16 || f64) {
      const double least = std::log(f16 ? s16 : 0x1p-1074);
      for (double x : spread(random, dt, least + 0.7, bottom, 512)) low.push_back(x);
      low.push_back(least - 2);
    } else {
      for (double x : {bottom - 5, bottom - 30, -1000.0}) low.push_back(x);
    }
    cases.push_back(make("near_underflow", {listed(dt, low)}, Check::kRelative));
  } else if (op == "log") {
    std::vector<double> v = {largest_of(dt), smallest_normal(dt), 1, kInf};
    for (int e : {-100, -30, -10, 10, 30, 100}) {
      if (representable(dt, std::ldexp(1.0, e)) && std::ldexp(1.0, e) >= smallest_normal(dt)) {
        v.push_back(std::ldexp(1.0, e) * 1.375);
      }
    }
    if (f16) {
      for (double k : {1.0, 3.0, 100.0, 1023.0}) v.push_back(k * s16);  // subnormals are kept
    }
    if (f64) v.push_back(0x1p-1074), v.push_back(0x1p-1060);
    cases.push_back(make("extreme_arguments", {listed(dt, v)}, Check::kRelative));
  } else if (op == "sigmoid") {
    // 1 / (1 + e^-x) for x far below zero is e^x to full relative precision;
    // forms through tanh or 1 - sigmoid(-x) lose it.
    const double lo = f16 ? -16 : f64 ? -700 : -85;
    cases.push_back(
        make("negative_tail", {listed(dt, spread(random, dt, lo, -8, 1024))}, Check::kRelative));
  }
  if (f16 && in_set(op, {"neg", "abs", "floor", "ceil", "maximum", "minimum"})) {
    // Moves and exact operations on subnormals: a device that flushes f16
    // subnormals (reads them as zero) returns zeros.
    std::vector<double> v;
    for (int i = 0; i < 64; ++i) {
      const double x = double(random.integer(1, 1023)) * s16;
      v.push_back((random.next() & 1) ? -x : x);
    }
    std::vector<InputSpec> in = {listed(dt, v)};
    if (in_set(op, {"maximum", "minimum"})) {
      std::vector<double> w;
      for (double x : v) w.push_back(-x / 2 == round_to_dtype(dt, -x / 2) ? -x / 2 : -x);
      in.push_back(listed(dt, w));
    }
    cases.push_back(make("subnormals_kept", std::move(in), Check::kBits));
  }
  return cases;
}

// --- Large common offsets -------------------------------------------------------------

// Rows offset + noise: what a two-pass (or Welford, or pairwise) computation
// in the kernel's compute type keeps to a few ulp of that type times the
// condition number max|x| / sd, and a one-pass E[x^2] - E[x]^2 loses to the
// square of it.
struct Offset {
  double offset, noise;
};
Offset offset_for(DLDataType dt) {
  if (dt == dtype::f16) return {30000, 32};  // f16 spacing 16 there: values 29968..30032
  if (dt == dtype::bf16) return {384, 8};    // bf16 spacing 2: values 376..392
  if (dt == dtype::f64) return {1e9, 1};
  return {1e4, 4};
}

std::vector<NumericsCase> offset_cases(const std::string& op, DLDataType dt) {
  if (!in_set(op, {"layer_norm", "batch_norm"})) return {};
  const Offset o = offset_for(dt);
  const double compute_unit = dt == dtype::f64 ? 0x1p-53 : 0x1p-24;  // f16/bf16 compute in f32
  const double sd = o.noise / std::sqrt(3.0);                        // of uniform(-noise, noise)
  const double condition = (o.offset + o.noise) / sd;
  NumericsCase c;
  if (op == "layer_norm") {
    const int64_t d = dt == dtype::bf16 ? 4096 : 256;
    c = make("large_common_offset",
             {generated({8, d}, dt, uniform(o.offset - o.noise, o.offset + o.noise)),
              generated({d}, dt, uniform(0.5, 1.5)), generated({d}, dt, uniform(-1, 1))},
             Check::kConditioned);
    // A sum of d terms in the compute type errs by up to ~sqrt(d) ulp in
    // practice; each ulp of the mean moves every output by condition ulp.
    c.extra_atol = 4 * std::sqrt(double(d)) * compute_unit * condition;
  } else {
    c = make("large_common_offset",
             {generated({4, 8, 16, 16}, dt, uniform(o.offset - o.noise, o.offset + o.noise)),
              generated({8}, dt, uniform(o.offset - o.noise / 4, o.offset + o.noise / 4)),
              generated({8}, dt, uniform(sd * sd / 2, sd * sd * 2)),
              generated({8}, dt, uniform(0.5, 1.5)), generated({8}, dt, uniform(-1, 1))},
             Check::kConditioned);
    // (x - mean) / sqrt(var + eps): a few roundings of values as large as x.
    c.extra_atol = 8 * compute_unit * condition * 1.5;
  }
  return {c};
}

// --- Running -------------------------------------------------------------------------

std::string call_text(const ops::OpSchema& schema, const OpCase& c) {
  std::string text = " (" + std::string(schema.name) + " of";
  for (const InputSpec& in : c.inputs) text += " " + dtype_name(in.dtype) + shape_text(in.shape);
  for (const AttrValue& a : c.attrs) text += " " + a.text();
  if (c.out_dtype.bits != 0) text += " to " + dtype_name(c.out_dtype);
  return text + ")";
}

void run_numerics_case(Stream& stream, const std::string& id, const ops::OpSchema& schema,
                       const NumericsCase& n, Family family) {
  const OpCase& c = n.call;
  const std::string what = id + call_text(schema, c);
  std::vector<HostTensor> host;
  std::vector<Tensor> device;
  device.reserve(c.inputs.size());
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    host.push_back(make_input(c.inputs[i], seed_of(id + "#" + std::to_string(i))));
    device.push_back(upload(stream, host.back()));
  }
  std::vector<const Tensor*> pointers;
  for (const Tensor& t : device) pointers.push_back(&t);
  std::vector<HostTensor> got;
  try {
    for (const Tensor& t : run_device(stream, schema, pointers, c.attrs, c.out_dtype)) {
      got.push_back(download(stream, t));
    }
  } catch (const Error& e) {
    fail(what + ": the device failed: " + e.what());
  }
  const std::vector<HostTensor> expected = run_host(what, schema, host, c.attrs, c.out_dtype);
  if (got.size() != expected.size()) {
    fail(what + ": the device wrote " + std::to_string(got.size()) + " outputs, the reference " +
         std::to_string(expected.size()));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const DLDataType dt = expected[i].dtype;
    switch (n.check) {
      case Check::kBits:
        expect_bits(what, i, got[i], expected[i]);
        break;
      case Check::kRelative:
        expect_close(what, i, got[i], expected[i], relative_tolerance(dt, family));
        break;
      case Check::kConditioned: {
        Tolerance t = tolerance_for(dt, family);
        t.atol += n.extra_atol;
        expect_close(what + " [atol includes the inputs' condition number]", i, got[i], expected[i],
                     t);
        break;
      }
      case Check::kUnbiased:
        expect_close(what, i, got[i], expected[i], tolerance_for(dt, family));
        break;
    }
  }
  if (n.check != Check::kUnbiased) return;
  // The result before rounding: the reference on the same values in f64.
  std::vector<HostTensor> wide;
  for (const HostTensor& t : host) wide.push_back(widen_to_f64(t));
  const std::vector<HostTensor> exact = run_host(what + " [in f64]", schema, wide, c.attrs);
  for (size_t i = 0; i < got.size(); ++i) {
    if (!is_float(got[i].dtype)) continue;
    expect_unbiased(what, i, got[i], exact[i], n.min_magnitude, n.min_count);
  }
}

std::vector<NumericsCase> numerics_cases(const ops::OpSchema& schema, DLDataType dt,
                                         uint32_t claimed) {
  const std::string op = schema.name;
  std::vector<NumericsCase> cases;
  if (op == "cast") return cast_known_values(dt, claimed & schema.dtypes);
  if (!is_float(dt)) return cases;
  const bool half = dt == dtype::f16 || dt == dtype::bf16;
  if (in_set(op, {"add", "sub", "mul"}) && dt != dtype::f64) {
    cases.push_back(correctly_rounded_arith(op, dt));
  }
  if (in_set(op, {"div", "sqrt", "rsqrt", "reciprocal"}) && half) {
    cases.push_back(correctly_rounded_arith(op, dt));
  }
  NumericsCase unbiased;
  if ((half || (dt == dtype::f32 && in_set(op, {"add", "sub", "mul"}))) &&
      unbiased_case(op, dt, unbiased)) {
    cases.push_back(std::move(unbiased));
  }
  for (NumericsCase& c : range_end_cases(op, dt)) cases.push_back(std::move(c));
  for (NumericsCase& c : offset_cases(op, dt)) cases.push_back(std::move(c));
  return cases;
}

}  // namespace

void register_numerics_tests(Registry& registry, const oar_device_properties_t& properties) {
  const uint32_t claimed = claimed_dtype_bits(properties);
  for (const ops::OpSchema& schema : ops::schemas()) {
    const std::string op = schema.name;
    const Family family = op_family(schema);
    for (DLDataType dt : ops::dtypes_in(schema.dtypes & claimed)) {
      const std::string prefix = "ops/" + op + "/" + dtype_name(dt) + "/";
      for (NumericsCase& n : numerics_cases(schema, dt, claimed)) {
        const std::string id = prefix + n.name;
        registry.add({id, "ops", op, dtype_name(dt), "ops/" + op,
                      [id, &schema, family, n = std::move(n)](TestContext& context) {
                        run_numerics_case(context.device.default_stream(), id, schema, n, family);
                      }});
      }
    }
  }
}

}  // namespace oar::conformance
