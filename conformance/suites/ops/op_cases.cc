#include "conformance/suites/ops/op_cases.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "conformance/suites/ops/op_case_parts.h"

namespace oar::conformance {
namespace cases {

bool in_set(const std::string& name, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (name == n) return true;
  }
  return false;
}

InputSpec spec(Shape shape, DLDataType dtype, Domain domain, bool transposed) {
  InputSpec s;
  s.shape = std::move(shape);
  s.dtype = dtype;
  s.domain = domain;
  s.transposed = transposed;
  return s;
}

InputSpec explicit_values(Shape shape, DLDataType dtype, std::vector<double> values) {
  InputSpec s = spec(std::move(shape), dtype, {});
  s.values = std::move(values);
  return s;
}

InputSpec bit_values(DLDataType dtype, std::vector<uint64_t> bits) {
  InputSpec s = spec({int64_t(bits.size())}, dtype, {});
  s.bits = std::move(bits);
  return s;
}

OpCase make_case(std::string name, std::vector<InputSpec> inputs, std::vector<AttrValue> attrs) {
  OpCase c;
  c.name = std::move(name);
  c.inputs = std::move(inputs);
  c.attrs = std::move(attrs);
  return c;
}

namespace {

// Whether |dtype| is one of the narrow integers (i8, u8, i16).
bool is_small_int(DLDataType dtype) { return (ops::dtype_bit(dtype) & ops::kSmallInts) != 0; }

// The range of a narrow integer dtype.
std::pair<int64_t, int64_t> small_int_range(DLDataType dtype) {
  if (dtype == dtype::u8) return {0, 255};
  if (dtype == dtype::i8) return {-128, 127};
  return {-32768, 32767};
}

}  // namespace

// The safe input domain of |op|'s data inputs.
Domain domain_for(const std::string& op, DLDataType dtype) {
  if (is_small_int(dtype)) {
    // The whole range: sums, products and negations wrap often (defined).
    auto [lo, hi] = small_int_range(dtype);
    return integers(lo, hi);
  }
  if (!is_float(dtype)) {
    if (op == "prod") return away_from_zero(1, 1);  // +-1: no overflow, any length
    if (in_set(op, {"sum", "mean"})) return integers(-100, 100);
    return integers(-1000, 1000);
  }
  if (in_set(op, {"log", "sqrt", "rsqrt"})) return uniform(0.05, 8);
  if (op == "reciprocal") return away_from_zero(0.25, 4);
  if (in_set(op, {"exp", "sin", "cos", "tanh", "sigmoid", "gelu", "silu", "erf"})) {
    return uniform(-4, 4);
  }
  if (in_set(op, {"sum", "mean"})) return uniform(-2, 2);
  // Factors near 1: products of a thousand stay far from overflow in f16.
  if (op == "prod") return away_from_zero(0.9, 1.1);
  return uniform(-8, 8);
}

// --- Elementwise --------------------------------------------------------------

struct UnaryShape {
  const char* name;
  Shape shape;
  bool transposed;
};
const UnaryShape kUnaryShapes[] = {
    {"scalar", {}, false},
    {"empty", {0, 5}, false},
    {"odd_7", {7}, false},
    {"prime_13x31", {13, 31}, false},
    {"rank4_2x3x5x7", {2, 3, 5, 7}, false},
    {"noncontiguous", {13, 31}, true},
    {"large_1M", kLarge1d, false},
};

std::vector<OpCase> unary_cases(const std::string& op, DLDataType dt) {
  std::vector<OpCase> cases;
  Domain d = domain_for(op, dt);
  for (const UnaryShape& s : kUnaryShapes) {
    cases.push_back(make_case(s.name, {spec(s.shape, dt, d, s.transposed)}));
  }
  if (op == "gelu") {
    cases.push_back(
        make_case("erf_form_explicit", {spec({13, 31}, dt, d)}, {attr("approximate", "none")}));
    cases.push_back(
        make_case("tanh_form_prime_13x31", {spec({13, 31}, dt, d)}, {attr("approximate", "tanh")}));
    cases.push_back(make_case("tanh_form_noncontiguous", {spec({13, 31}, dt, d, true)},
                              {attr("approximate", "tanh")}));
    cases.push_back(
        make_case("tanh_form_large_1M", {spec(kLarge1d, dt, d)}, {attr("approximate", "tanh")}));
  }
  if (is_float(dt)) {
    // IEEE special values through every formula (docs/ops.md's table), and
    // relu/abs/neg of NaN (a max(x, 0) written with fmax returns 0).
    std::vector<AttrValue> forms[2] = {{}, {attr("approximate", "tanh")}};
    for (int form = 0; form < (op == "gelu" ? 2 : 1); ++form) {
      cases.push_back(
          make_case(form == 0 ? "special_values_ieee" : "tanh_form_special_values_ieee",
                    {explicit_values(
                        {11}, dt, {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 3.0, -3.0})},
                    forms[form]));
    }
  }
  if (is_float(dt) && in_set(op, {"tanh", "sigmoid", "silu", "gelu", "erf"})) {
    // Far from zero the naive formulas overflow: e^x / (1 + e^x) and
    // (e^2x - 1) / (e^2x + 1) give inf / inf = NaN.
    std::vector<double> v;
    for (double m : {20.0, 50.0, 100.0, 500.0, 1000.0, 30000.0}) v.push_back(m), v.push_back(-m);
    if (dt != dtype::f16) {
      for (double m : {1e10, 1e30}) v.push_back(m), v.push_back(-m);
    }
    const Shape shape = {int64_t(v.size())};
    cases.push_back(make_case("large_magnitudes", {explicit_values(shape, dt, v)}));
    if (op == "gelu") {
      cases.push_back(make_case("tanh_form_large_magnitudes", {explicit_values(shape, dt, v)},
                                {attr("approximate", "tanh")}));
    }
  }
  if (op == "gelu") {
    // Where the erf and tanh forms differ by more than every dtype's
    // tolerance (|x| near 3: 10-15% of the value): a kernel that ignores
    // |approximate| fails in bf16 too.
    cases.push_back(make_case("erf_form_tail_separates_forms",
                              {spec({13, 31}, dt, uniform(-3.3, -2.7))},
                              {attr("approximate", "none")}));
    cases.push_back(make_case("tanh_form_tail_separates_forms",
                              {spec({13, 31}, dt, uniform(-3.3, -2.7))},
                              {attr("approximate", "tanh")}));
  }
  if (in_set(op, {"neg", "abs"}) && is_small_int(dt)) {
    // Two's complement at the narrow widths: -(-128) == -128 in i8,
    // -(1) == 255 in u8, abs(-32768) == -32768 in i16.
    const uint64_t bits = dtype_size(dt) * 8;
    const uint64_t min = uint64_t(1) << (bits - 1), max = min - 1, minus_one = (min << 1) - 1;
    cases.push_back(
        make_case("narrow_int_wraps", {bit_values(dt, {min, max, minus_one, 0, 1, 2})}));
  } else if (in_set(op, {"neg", "abs"}) && !is_float(dt)) {
    // Two's complement: -INT_MIN == INT_MIN, abs(INT_MIN) == INT_MIN.
    const uint64_t min = dt == dtype::i32 ? 0x80000000ull : 0x8000000000000000ull;
    const uint64_t max = dt == dtype::i32 ? 0x7fffffffull : 0x7fffffffffffffffull;
    const uint64_t minus_one = dt == dtype::i32 ? 0xffffffffull : ~0ull;
    cases.push_back(make_case("int_min_wraps", {bit_values(dt, {min, max, minus_one, 0, 1})}));
  }
  if (op == "exp" && is_float(dt)) {
    cases.push_back(make_case("special_values_nan_inf_overflow",
                              {explicit_values({6}, dt, {kNaN, kInf, -kInf, 100.0, -200.0, 0.0})}));
  }
  if (op == "log" && is_float(dt)) {
    cases.push_back(make_case("special_values_zero_negative_inf_nan",
                              {explicit_values({5}, dt, {0.0, -1.0, kInf, kNaN, 1.0})}));
  }
  return cases;
}

const std::vector<BinaryShape>& binary_shapes() {
  static const std::vector<BinaryShape> shapes = {
      {"scalar", {}, false, {}, false},
      {"scalar_with_tensor", {}, false, {13, 31}, false},
      {"empty", {0, 5}, false, {0, 5}, false},
      {"empty_broadcast", {0, 5}, false, {5}, false},
      {"odd_7", {7}, false, {7}, false},
      {"prime_13x31", {13, 31}, false, {13, 31}, false},
      {"broadcast_row", {13, 31}, false, {31}, false},
      {"broadcast_column", {13, 1}, false, {13, 31}, false},
      {"broadcast_both_7x1x5_1x13x5", {7, 1, 5}, false, {1, 13, 5}, false},
      {"noncontiguous_a", {13, 31}, true, {13, 31}, false},
      {"noncontiguous_both_broadcast", {13, 31}, true, {1, 31}, true},
      {"large_1M", kLarge1d, false, kLarge1d, false},
  };
  return shapes;
}

// Domains of (a, b) for a binary or compare operator.
std::pair<Domain, Domain> binary_domains(const std::string& op, DLDataType dt,
                                         const std::string& category) {
  if (category == "compare") return {integers(-2, 2), integers(-2, 2)};  // ties
  if (op == "div") return {uniform(-4, 4), away_from_zero(0.5, 4)};
  if (op == "pow") return {uniform(0.25, 3), uniform(-2, 2)};
  Domain d = domain_for(op, dt);
  return {d, d};
}

std::vector<OpCase> binary_cases(const std::string& op, DLDataType dt,
                                 const std::string& category) {
  std::vector<OpCase> cases;
  auto [da, db] = binary_domains(op, dt, category);
  for (const BinaryShape& s : binary_shapes()) {
    cases.push_back(
        make_case(s.name, {spec(s.a, dt, da, s.a_transposed), spec(s.b, dt, db, s.b_transposed)}));
  }
  if (in_set(op, {"maximum", "minimum"}) && is_float(dt)) {
    cases.push_back(
        make_case("nan_inf_propagation",
                  {explicit_values({8}, dt, {kNaN, 1.0, kNaN, -kInf, kInf, 2.0, -3.0, kInf}),
                   explicit_values({8}, dt, {1.0, kNaN, kNaN, 5.0, -kInf, -kInf, kInf, kNaN})}));
  }
  if (in_set(op, {"add", "sub", "mul", "maximum", "minimum"}) && is_small_int(dt)) {
    // Wrap-around at the narrow widths (computed in 32 bits, the result must
    // keep only the low bits), and the signed/unsigned order of maximum and
    // minimum (0x80 is -128 in i8 and 128 in u8).
    const uint64_t bits = dtype_size(dt) * 8;
    const uint64_t min = uint64_t(1) << (bits - 1), max = min - 1, minus_one = (min << 1) - 1;
    const uint64_t root = bits == 8 ? 12 : 182;  // just above sqrt(max)
    cases.push_back(make_case("narrow_overflow_wraps",
                              {bit_values(dt, {max, min, max, min, root, minus_one, 100, 1}),
                               bit_values(dt, {1, minus_one, min, 1, root, minus_one, 100, max})}));
  }
  if (in_set(op, {"add", "mul"}) && dt == dtype::i32) {
    // Two's complement wrap-around, as docs/ops.md states for integers.
    cases.push_back(make_case(
        "overflow_wraps",
        {explicit_values(
             {7}, dt,
             {2147483647.0, 2147483600.0, -2147483648.0, 1000000.0, 65536.0, 46341.0, -7.0}),
         explicit_values({7}, dt, {1.0, 100.0, -1.0, 1000000.0, 65536.0, 46341.0, 3.0})}));
  }
  if (in_set(op, {"add", "sub", "mul"}) &&
      (dt == dtype::i64 || (dt == dtype::i32 && op == "sub"))) {
    // Wrap-around at the ends of the range, bit patterns a double cannot carry.
    const bool wide = dt == dtype::i64;
    const uint64_t min = wide ? 0x8000000000000000ull : 0x80000000ull;
    const uint64_t max = wide ? 0x7fffffffffffffffull : 0x7fffffffull;
    const uint64_t one = 1, minus_one = wide ? ~0ull : 0xffffffffull;
    const uint64_t big = wide ? 0x100000000ull : 0x10000ull;  // 2^32, 2^16
    const uint64_t root = wide ? 3037000500ull : 46341ull;    // just above sqrt(max)
    cases.push_back(make_case("overflow_wraps_at_the_ends",
                              {bit_values(dt, {max, min, max, min, big, root, minus_one}),
                               bit_values(dt, {one, minus_one, min, one, big, root, min})}));
  }
  if (op == "pow" && is_float(dt)) {
    // A negative base with an integral exponent is finite (exp(b log a) is NaN).
    cases.push_back(
        make_case("negative_base_integral_exponent",
                  {spec({13, 31}, dt, uniform(-3, -0.25)), spec({13, 31}, dt, integers(-3, 3))}));
    const double n = kNaN, i = kInf;
    cases.push_back(make_case(
        "special_values",
        {explicit_values({16}, dt,
                         {n, 1, -8, 0.0, -0.0, -0.0, -2, i, -i, 0.5, 2, -1, 0.0, 3, -0.0, 2}),
         explicit_values({16}, dt,
                         {0.0, n, 1.0 / 3, -1, -1, -2, 3, -1, 3, i, i, i, 0.0, 1, 3, -0.0})}));
  }
  if (category == "compare" && is_float(dt)) {
    cases.push_back(make_case("nan_inf_operands",
                              {explicit_values({6}, dt, {kNaN, kNaN, 1.0, kInf, -kInf, kInf}),
                               explicit_values({6}, dt, {kNaN, 1.0, kNaN, kInf, kInf, 1.0})}));
  }
  return cases;
}

struct WhereShape {
  const char* name;
  Shape condition, a, b;
  bool transposed;
};
const WhereShape kWhereShapes[] = {
    {"scalar", {}, {}, {}, false},
    {"empty", {0, 5}, {0, 5}, {0, 5}, false},
    {"prime_13x31", {13, 31}, {13, 31}, {13, 31}, false},
    {"broadcast_all_three", {13, 1}, {13, 31}, {31}, false},
    {"scalar_branches", {13, 31}, {}, {}, false},
    {"noncontiguous", {13, 31}, {13, 31}, {13, 31}, true},
    {"large_1M", kLarge1d, kLarge1d, kLarge1d, false},
};

std::vector<OpCase> where_cases(DLDataType dt) {
  std::vector<OpCase> cases;
  Domain d = domain_for("where", dt);
  for (const WhereShape& s : kWhereShapes) {
    cases.push_back(make_case(s.name, {spec(s.condition, dtype::boolean, d, s.transposed),
                                       spec(s.a, dt, d, s.transposed), spec(s.b, dt, d)}));
  }
  if (is_float(dt)) {
    // The unselected operand is not evaluated: cond * a + (1 - cond) * b
    // lets its NaN (or inf * 0) through.
    const double n = kNaN, i = kInf;
    cases.push_back(make_case("nan_inf_in_unselected_branch",
                              {explicit_values({6}, dtype::boolean, {1, 0, 1, 0, 1, 0}),
                               explicit_values({6}, dt, {1, n, -i, i, n, n}),
                               explicit_values({6}, dt, {n, 2, n, -i, -i, 5})}));
  }
  return cases;
}

// --- Reductions ---------------------------------------------------------------

struct ReductionShape {
  const char* name;
  Shape shape;
  bool transposed;
  std::vector<int64_t> axes;  // empty: every axis
  bool keepdim;
};
const ReductionShape kReductionShapes[] = {
    {"scalar_all_axes", {}, false, {}, false},
    {"all_axes_13x31", {13, 31}, false, {}, false},
    {"all_axes_keepdim", {13, 31}, false, {}, true},
    {"axis0_13x31", {13, 31}, false, {0}, false},
    {"last_axis_keepdim_7x13x5", {7, 13, 5}, false, {-1}, true},
    {"axes_0_2_7x13x5", {7, 13, 5}, false, {0, 2}, false},
    {"axes_0_2_keepdim", {7, 13, 5}, false, {0, 2}, true},
    {"empty_output", {0, 5}, false, {1}, false},
    {"prime_257", {257}, false, {0}, false},
    {"noncontiguous_axis0", {13, 31}, true, {0}, false},
    {"large_rows_1024x1024", kLargeRows, false, {-1}, false},
};

int64_t reduced_count(const Shape& shape, const std::vector<int64_t>& axes) {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool reduced = axes.empty();
    for (int64_t a : axes) reduced |= (a < 0 ? a + int64_t(shape.size()) : a) == int64_t(d);
    if (reduced) n *= shape[d];
  }
  return n;
}

std::vector<OpCase> reduction_cases(const std::string& op, DLDataType dt) {
  std::vector<OpCase> cases;
  Domain d = domain_for(op, dt);
  for (const ReductionShape& s : kReductionShapes) {
    OpCase c = make_case(s.name, {spec(s.shape, dt, d, s.transposed)},
                         {attr("axes", s.axes), attr("keepdim", s.keepdim)});
    c.k = reduced_count(s.shape, s.axes);
    cases.push_back(std::move(c));
  }
  if (op != "prod") {  // a product of a million factors is not a useful test
    cases.push_back(
        make_case("large_all_axes_1M", {spec(kLarge1d, dt, d)}, {attr("axes", Shape{})}));
  }
  if (in_set(op, {"sum", "prod"})) {  // the empty sum is 0, the empty product 1
    cases.push_back(make_case("over_empty_axis", {spec({0, 5}, dt, d)}, {attr("axes", Shape{0})}));
  }
  if (in_set(op, {"sum", "mean"})) {
    // Long sums of terms of one sign: an accumulator of the element type
    // stops growing (f16 at a few hundred) and a single running f32
    // accumulator over millions of terms drifts past the tolerance; wider,
    // compensated, pairwise or blocked sums stay within it. Integers must be
    // exact (past 2^24 a float accumulator is not) and wrap.
    const bool f32 = dt == dtype::f32;
    const Shape line = {f32 ? int64_t(1) << 22 : kLargeElements};
    // f32: terms in [1, 1.1], whose fractions a running f32 sum past 2^21
    // (spacing 0.25) drops every time: a bias, not a random walk.
    Domain positive = dt == dtype::f16   ? uniform(0, 1.0 / 16)  // sums ~32768 < 65504
                      : f32              ? uniform(1, 1.1)
                      : is_float(dt)     ? uniform(0, 1)
                      : dt == dtype::i32 ? integers(0, 1000)
                                         : integers(int64_t(1) << 39, int64_t(1) << 40);
    if (is_float(dt) || op == "sum") {
      cases.push_back(make_case(f32 ? "long_positive_4M" : "long_positive_1M",
                                {spec(line, dt, positive)}, {attr("axes", Shape{})}));
      Domain column = dt == dtype::f16 ? uniform(0, 0.25) : positive;
      cases.push_back(make_case("long_positive_axis0_65536x16", {spec({65536, 16}, dt, column)},
                                {attr("axes", Shape{0})}));
    }
    if (op == "sum" && !is_float(dt)) {
      Domain wraps = dt == dtype::i32 ? integers(int64_t(1) << 20, int64_t(1) << 21)
                                      : integers(int64_t(1) << 52, int64_t(1) << 53);
      cases.push_back(
          make_case("long_sum_wraps", {spec(kLarge1d, dt, wraps)}, {attr("axes", Shape{})}));
    }
  }
  if (in_set(op, {"max", "min"}) && is_float(dt)) {
    const double n = kNaN, i = kInf;
    cases.push_back(make_case("nan_inf_propagation",
                              {explicit_values({4, 5}, dt, {1, 2, 3,  4, 5, 1, n,  3, 9, -9,
                                                            1, i, -2, 0, 3, n, -i, 1, 2, -3})},
                              {attr("axes", Shape{1})}));
  }
  return cases;
}

struct ArgShape {
  const char* name;
  Shape shape;
  bool transposed;
  int64_t axis;
  bool keepdim;
};
const ArgShape kArgShapes[] = {
    {"scalar", {}, false, 0, false},
    {"axis0_13x31", {13, 31}, false, 0, false},
    {"axis1_7x13x5", {7, 13, 5}, false, 1, false},
    {"last_axis_keepdim", {7, 13, 5}, false, -1, true},
    {"empty_output", {0, 5}, false, 1, false},
    {"noncontiguous_axis0", {13, 31}, true, 0, false},
    {"large_rows_1024x1024", kLargeRows, false, -1, false},
};

std::vector<OpCase> arg_reduction_cases(const std::string& op, DLDataType dt) {
  std::vector<OpCase> cases;
  Domain d = domain_for(op, dt);
  for (const ArgShape& s : kArgShapes) {
    cases.push_back(make_case(s.name, {spec(s.shape, dt, d, s.transposed)},
                              {attr("axis", s.axis), attr("keepdim", s.keepdim)}));
  }
  // Few distinct values: the first of equal extremes must win.
  cases.push_back(make_case("ties_pick_first_13x31", {spec({13, 31}, dt, integers(-3, 3))},
                            {attr("axis", int64_t(1))}));
  if (is_float(dt)) {
    // NaN is the extreme for both and the first one wins; infinities are
    // ordinary extremes with ties.
    const double n = kNaN, i = kInf;
    cases.push_back(make_case(
        "nan_inf_rows", {explicit_values({5, 5}, dt, {1, n, 3, n, 0, -i, -i, -5, -i, -i, 2,  2, i,
                                                      i, 1, n, 1, 2, 3,  4,  -1, -2, -3, -4, n})},
        {attr("axis", int64_t(1))}));
  }
  return cases;
}

// --- Creation and layout ---------------------------------------------------------

std::vector<OpCase> fill_cases(DLDataType dt) {
  struct FillCase {
    const char* name;
    Shape shape;
    double value_float, value_int, value_bool;
  };
  const FillCase table[] = {
      {"scalar", {}, 2.5, 7, 1},
      {"empty", {0, 3}, 2.5, 7, 1},
      {"negative_7x13", {7, 13}, -3.25, -3, 1},
      {"zero_257", {257}, 0, 0, 0},
      {"large_1M", kLarge1d, 1.5, 5, 1},
  };
  std::vector<OpCase> cases;
  for (const FillCase& f : table) {
    double value = is_float(dt) ? f.value_float : dt == dtype::boolean ? f.value_bool : f.value_int;
    if (dt == dtype::u8) value = std::fabs(value);  // a negative one is out of u8's range
    OpCase c = make_case(f.name, {}, {attr("value", value)});
    c.out_dtype = dt;
    c.fill_shape = f.shape;
    cases.push_back(std::move(c));
  }
  // The ends of each integer range (exact as doubles; i64's largest double
  // below 2^63 is 2^63 - 1024) and integers no float holds: a plugin that
  // passes the value through float, or through a sign and abs(), loses them
  // (one turned INT32_MIN into 0).
  std::vector<std::pair<const char*, double>> ends;
  if (dt == dtype::i8) ends = {{"min", -128}, {"max", 127}};
  if (dt == dtype::u8) ends = {{"max", 255}};
  if (dt == dtype::i16) ends = {{"min", -32768}, {"max", 32767}};
  if (dt == dtype::i32) ends = {{"min", -0x1p31}, {"max", 0x1p31 - 1}, {"above_2p24", 0x1p24 + 1}};
  if (dt == dtype::i64)
    ends = {{"min", -0x1p63}, {"max", 0x1p63 - 1024}, {"above_2p53", -(0x1p53 + 2)}};
  for (const auto& [name, value] : ends) {
    OpCase c = make_case(std::string("extreme_") + name + "_33", {}, {attr("value", value)});
    c.out_dtype = dt;
    c.fill_shape = {33};
    cases.push_back(std::move(c));
  }
  return cases;
}

std::vector<OpCase> copy_cases(DLDataType dt) {
  Domain d = domain_for("copy", dt);
  return {
      make_case("scalar", {spec({}, dt, d)}),
      make_case("empty", {spec({0, 5}, dt, d)}),
      make_case("contiguous_13x31", {spec({13, 31}, dt, d)}),
      make_case("noncontiguous_13x31", {spec({13, 31}, dt, d, true)}),
      make_case("noncontiguous_rank3_4x7x9", {spec({4, 7, 9}, dt, d, true)}),
      make_case("noncontiguous_large_1024x1024", {spec(kLargeRows, dt, d, true)}),
  };
}

std::vector<OpCase> cast_cases(DLDataType dt, uint32_t claimed) {
  std::vector<OpCase> cases;
  for (DLDataType to : ops::dtypes_in(claimed)) {
    // Exactly representable, in range of every target: the result is defined
    // (float -> u8 only from non-negative values; int -> int wraps, defined).
    const bool unsigned_target = to == dtype::u8 && is_float(dt);
    Domain d = (to == dtype::boolean || dt == dtype::boolean) ? integers(-2, 2)
               : is_float(dt) ? uniform(unsigned_target ? 0 : -100, 100)
                              : integers(-100, 100);
    std::string target = "to_" + dtype_name(to);
    for (auto [suffix, shape, transposed] :
         {std::tuple{"_257", Shape{257}, false}, std::tuple{"_noncontiguous", Shape{13, 31}, true},
          std::tuple{"_scalar", Shape{}, false}, std::tuple{"_empty", Shape{0, 3}, false}}) {
      OpCase c = make_case(target + suffix, {spec(shape, dt, d, transposed)});
      c.out_dtype = to;
      cases.push_back(std::move(c));
    }
    if (!is_small_int(to)) continue;
    std::vector<double> values;
    std::string name;
    if (is_float(dt)) {
      // Truncation toward zero near the ends of the narrow range (values
      // exact in every float dtype, so the input is what the case says).
      name = target + "_truncates_near_the_ends";
      values = to == dtype::i8 ? std::vector<double>{2.75, -2.75, 127.5, -128.5, 0.5, -0.5}
               : to == dtype::u8
                   ? std::vector<double>{2.75, -0.75, 127.5, 255.0, 100.5, 0.5}
                   : std::vector<double>{2.75, -2.75, 32512.0, -32768.0, 1000.5, -0.5};
    } else if (dt != dtype::boolean) {
      // Integer -> narrow integer keeps the low bits (no saturation).
      name = target + "_wraps";
      values = {300, -1, 128, -129, 255, 256, 65535, 40000, -40000, 127, -128};
    } else {
      continue;
    }
    OpCase c = make_case(name, {explicit_values({int64_t(values.size())}, dt, values)});
    c.out_dtype = to;
    cases.push_back(std::move(c));
  }
  OpCase large = make_case("to_f32_large_1M", {spec(kLarge1d, dt, integers(-100, 100))});
  large.out_dtype = dtype::f32;
  cases.push_back(std::move(large));
  return cases;
}

std::vector<OpCase> transpose_cases(DLDataType dt) {
  Domain d = domain_for("transpose", dt);
  auto c = [&](const char* name, Shape shape, Shape perm, bool transposed = false) {
    return make_case(name, {spec(std::move(shape), dt, d, transposed)}, {attr("perm", perm)});
  };
  return {
      c("2d_13x31", {13, 31}, {1, 0}),
      c("rank3_rotate", {4, 7, 9}, {2, 0, 1}),
      c("rank4_shuffle", {2, 3, 5, 7}, {3, 1, 0, 2}),
      c("identity", {5, 7}, {0, 1}),
      c("negative_perm", {4, 7, 9}, {-1, 0, 1}),
      c("scalar", {}, {}),
      c("empty", {0, 5}, {1, 0}),
      c("noncontiguous_input", {13, 31}, {1, 0}, true),
      c("large_1024x1024", kLargeRows, {1, 0}),
  };
}

std::vector<OpCase> concat_cases(DLDataType dt) {
  Domain d = domain_for("concat", dt);
  auto in = [&](Shape shape, bool transposed = false) {
    return spec(std::move(shape), dt, d, transposed);
  };
  auto axis = [](int64_t a) { return std::vector<AttrValue>{attr("axis", a)}; };
  return {
      make_case("two_axis0", {in({3, 5}), in({4, 5})}, axis(0)),
      make_case("three_axis1", {in({4, 2}), in({4, 7}), in({4, 1})}, axis(1)),
      make_case("negative_axis", {in({2, 3, 4}), in({2, 3, 5})}, axis(-1)),
      make_case("single_input", {in({5, 7})}, axis(0)),
      make_case("with_empty_input", {in({0, 5}), in({3, 5})}, axis(0)),
      make_case("noncontiguous_input", {in({13, 31}, true), in({13, 31})}, axis(1)),
      make_case("large_2x512x1024", {in({512, 1024}), in({512, 1024})}, axis(0)),
  };
}

std::vector<OpCase> slice_cases(DLDataType dt) {
  Domain d = domain_for("slice", dt);
  auto c = [&](const char* name, Shape shape, int64_t axis, int64_t start, int64_t end,
               int64_t step, bool transposed = false) {
    return make_case(
        name, {spec(std::move(shape), dt, d, transposed)},
        {attr("axis", axis), attr("start", start), attr("end", end), attr("step", step)});
  };
  return {
      c("step3_axis1", {13, 31}, 1, 2, 20, 3),
      c("negative_start_end", {13, 31}, -1, -10, -2, 1),
      c("end_past_extent_clamped", {13, 31}, 0, 5, INT64_MAX, 1),
      c("negative_start_past_extent_clamped", {13, 31}, 0, -100, 100, 2),
      c("step_beyond_extent", {13, 31}, 1, 0, 31, 40),
      c("start_after_end_is_empty", {13, 31}, 1, 20, 10, 1),
      c("rank3_middle_axis", {4, 7, 9}, 1, 1, 6, 2),
      c("noncontiguous_input", {13, 31}, 0, 1, 12, 2, true),
      c("large_1024x1024", kLargeRows, 1, 1, 1023, 2),
  };
}

std::vector<OpCase> index_select_cases(DLDataType dt) {
  Domain d = domain_for("index_select", dt);
  auto c = [&](const char* name, Shape x, bool transposed, int64_t axis, int64_t count,
               DLDataType index_dtype) {
    int64_t extent = x[size_t(axis)];
    return make_case(
        name, {spec(x, dt, d, transposed), spec({count}, index_dtype, integers(0, extent - 1))},
        {attr("axis", axis)});
  };
  return {
      c("axis0", {13, 31}, false, 0, 5, dtype::i64),
      c("axis1_with_repeats", {13, 31}, false, 1, 40, dtype::i64),
      c("empty_index", {13, 31}, false, 0, 0, dtype::i64),
      c("index_i32", {13, 31}, false, 1, 7, dtype::i32),
      c("noncontiguous_input", {13, 31}, true, 0, 9, dtype::i64),
      c("large_1024x1024", kLargeRows, false, 0, 512, dtype::i64),
  };
}

std::vector<OpCase> gather_cases(DLDataType dt) {
  Domain d = domain_for("gather", dt);
  auto c = [&](const char* name, Shape x, bool transposed, int64_t axis, Shape index,
               DLDataType index_dtype) {
    int64_t extent = x[size_t(axis < 0 ? axis + int64_t(x.size()) : axis)];
    return make_case(
        name, {spec(x, dt, d, transposed), spec(index, index_dtype, integers(0, extent - 1))},
        {attr("axis", axis)});
  };
  return {
      c("axis0", {13, 31}, false, 0, {20, 31}, dtype::i64),
      c("axis1_rank3", {7, 13, 5}, false, 1, {7, 4, 5}, dtype::i64),
      c("last_axis_index_i32", {13, 31}, false, -1, {13, 50}, dtype::i32),
      c("empty_index", {13, 31}, false, 1, {13, 0}, dtype::i64),
      c("noncontiguous_input", {13, 31}, true, 1, {13, 8}, dtype::i64),
      c("large_1024x1024", kLargeRows, false, 1, {1024, 512}, dtype::i64),
  };
}

std::vector<OpCase> embedding_cases(DLDataType dt) {
  Domain d = domain_for("embedding", dt);
  auto c = [&](const char* name, Shape weight, bool transposed, Shape index,
               DLDataType index_dtype) {
    return make_case(name, {spec(weight, dt, d, transposed),
                            spec(index, index_dtype, integers(0, weight[0] - 1))});
  };
  return {
      c("index_1d", {50, 16}, false, {7}, dtype::i64),
      c("index_2d", {50, 16}, false, {3, 5}, dtype::i64),
      c("scalar_index", {50, 16}, false, {}, dtype::i64),
      c("empty_index", {50, 16}, false, {0}, dtype::i64),
      c("index_i32", {50, 16}, false, {9}, dtype::i32),
      c("noncontiguous_weight", {50, 16}, true, {11}, dtype::i64),
      c("large_1000x256_1024", {1000, 256}, false, {1024}, dtype::i64),
  };
}

// --- Neural network ---------------------------------------------------------------

std::vector<OpCase> matmul_cases(DLDataType dt) {
  Domain d = uniform(-1, 1);
  auto c = [&](const char* name, Shape a, Shape b, bool ta = false, bool tb = false,
               bool a_noncontiguous = false) {
    return make_case(name, {spec(a, dt, d, a_noncontiguous), spec(b, dt, d)},
                     {attr("transpose_a", ta), attr("transpose_b", tb)});
  };
  std::vector<OpCase> cases = {
      c("square_64", {64, 64}, {64, 64}),
      c("odd_7x13x5", {7, 13}, {13, 5}),
      c("transpose_a", {13, 7}, {13, 5}, true),
      c("transpose_b", {7, 13}, {5, 13}, false, true),
      c("transpose_both", {13, 7}, {5, 13}, true, true),
      c("batched_3x7x13x5", {3, 7, 13}, {3, 13, 5}),
      c("broadcast_batch", {2, 1, 7, 13}, {3, 13, 5}),
      c("matrix_vector_257", {31, 257}, {257, 1}),
      c("empty_m", {0, 13}, {13, 5}),
      c("empty_k_gives_zeros", {7, 0}, {0, 5}),
      c("noncontiguous_a", {7, 13}, {13, 5}, false, false, true),
      c("large_128x256x96", {128, 256}, {256, 96}),
      // K, N and the row starts multiples of 8 (the 32-byte-load paths of
      // GPU-style plugins), M not a multiple of their row tiles, a batch
      // broadcast on each side.
      c("aligned_broadcast_2x1x37x24x72", {2, 1, 37, 24}, {3, 24, 72}),
  };
  // Every combination of transposes with every batch layout: both batched,
  // either side broadcast (size 1), both broadcast, and either side of a
  // lower rank. M, K, N = 5, 7, 3, batch [2, 3].
  struct Batch {
    const char* name;
    Shape a, b;  // batch dimensions
  };
  const Batch batches[] = {
      {"batched", {2, 3}, {2, 3}},     {"a_broadcast", {1, 3}, {2, 3}},
      {"b_broadcast", {2, 3}, {2, 1}}, {"both_broadcast", {2, 1}, {1, 3}},
      {"a_lower_rank", {}, {2, 3}},    {"b_lower_rank", {2, 3}, {3}},
  };
  for (const Batch& batch : batches) {
    for (int t = 0; t < 4; ++t) {
      const bool ta = t & 1, tb = t & 2;
      Shape a = batch.a, b = batch.b;
      for (int64_t d : ta ? Shape{7, 5} : Shape{5, 7}) a.push_back(d);
      for (int64_t d : tb ? Shape{3, 7} : Shape{7, 3}) b.push_back(d);
      const char* suffix[] = {"", "_transpose_a", "_transpose_b", "_transpose_both"};
      cases.push_back(c("", a, b, ta, tb));
      cases.back().name = std::string(batch.name) + suffix[t];
    }
  }
  // A long sum of positive products: an f16 or bf16 accumulator fails.
  cases.push_back(
      make_case("large_k_16384_positive",
                {spec({4, 16384}, dt, uniform(0, 1)), spec({16384, 4}, dt, uniform(0, 1))},
                {attr("transpose_a", false), attr("transpose_b", false)}));
  return cases;
}

std::vector<OpCase> matmul_w8_cases(DLDataType dt) {
  // Per-channel scales as a quantizer makes them (|w| * scale ~ the float
  // weight), weights over the whole i8 range.
  const Domain xs = uniform(-1, 1), ws = integers(-128, 127), ss = away_from_zero(0.002, 0.05);
  auto c = [&](const char* name, Shape x, int64_t n, bool transposed = false,
               std::optional<Domain> xd = {}, std::optional<Domain> wd = {}) {
    const int64_t k = x.back();
    return make_case(name, {spec(x, dt, xd.value_or(xs), transposed),
                            spec({n, k}, dtype::i8, wd.value_or(ws)), spec({n}, dt, ss)});
  };
  return {
      c("rows_7x13_n5", {7, 13}, 5),
      c("vector_x_k257_n3", {257}, 3),
      c("batched_2x3x16_n9", {2, 3, 16}, 9),
      c("one_row_k4096_n8", {1, 4096}, 8),
      c("empty_rows", {0, 13}, 5),
      c("empty_k_gives_zeros", {4, 0}, 5),
      c("empty_n", {4, 13}, 0),
      c("noncontiguous_x", {13, 31}, 6, true),
      c("large_64x1024_n256", {64, 1024}, 256),
      // A long sum of positive products: an f16/bf16 accumulator fails.
      c("large_k_16384_positive", {4, 16384}, 4, false, uniform(0, 1), integers(0, 127)),
  };
}

std::vector<OpCase> softmax_cases(DLDataType dt) {
  Domain d = uniform(-5, 5);
  auto c = [&](const char* name, Shape x, int64_t axis, Domain domain, bool transposed = false) {
    return make_case(name, {spec(x, dt, domain, transposed)}, {attr("axis", axis)});
  };
  return {
      c("last_axis_13x31", {13, 31}, -1, d),
      c("axis0_13x31", {13, 31}, 0, d),
      c("middle_axis_4x7x9", {4, 7, 9}, 1, d),
      c("scalar", {}, 0, d),
      c("empty", {0, 5}, -1, d),
      c("axis_of_one", {7, 1}, -1, d),
      c("large_magnitudes_needs_max_shift", {13, 31}, -1, uniform(-60, 60)),
      c("noncontiguous", {13, 31}, -1, d, true),
      c("large_1024x1024", kLargeRows, -1, d),
      // Without the max shift e^1000 is inf (and e^-1000 is 0): NaN rows.
      c("logits_near_plus_1000", {13, 31}, -1, uniform(995, 1005)),
      c("logits_near_minus_1000", {13, 31}, -1, uniform(-1005, -995)),
      c("logits_spread_pm1000", {13, 31}, -1, uniform(-1000, 1000)),
      c("logits_near_30000", {13, 31}, -1, uniform(29980, 30020)),
      // A row sum of 2048 exponentials (~200) in an f16 accumulator loses
      // most terms; rows stay short enough for drivers that cap the loop
      // iterations of one invocation (llvmpipe: ~16384).
      c("long_rows_16x2048", {16, 2048}, -1, d),
      make_case("minus_inf_entries",
                {explicit_values({3, 5}, dt,
                                 {-kInf, 1000, 999, -kInf, 998, 0, -kInf, -kInf, -kInf, -kInf,
                                  -kInf, -1000, 1000, 5, -kInf})},
                {attr("axis", int64_t(-1))}),
  };
}

std::vector<OpCase> norm_cases(const std::string& op, DLDataType dt) {
  const bool with_bias = op == "layer_norm";
  auto c = [&](const char* name, Shape x, bool transposed = false,
               std::vector<AttrValue> attrs = {}, Domain domain = uniform(-3, 3)) {
    std::vector<InputSpec> in = {spec(x, dt, domain, transposed),
                                 spec({x.back()}, dt, uniform(0.5, 1.5))};
    if (with_bias) in.push_back(spec({x.back()}, dt, uniform(-1, 1)));
    return make_case(name, std::move(in), std::move(attrs));
  };
  // Rows whose variance (rms_norm: mean square) is of the order of eps, so
  // that eps changes every output by far more than any dtype's tolerance.
  const Domain tiny = with_bias ? uniform(-0.004, 0.004) : uniform(-0.002, 0.002);
  return {
      c("rows_13x31", {13, 31}),
      c("rank3_2x7x64", {2, 7, 64}),
      c("eps_1e-2", {13, 31}, false, {attr("eps", 1e-2)}),
      c("width_one", {7, 1}),
      c("empty_rows", {0, 31}),
      c("noncontiguous", {13, 31}, true),
      c("large_1024x1024", kLargeRows),
      c("default_eps_matters_tiny_variance", {13, 31}, false, {}, tiny),
      c("eps_1_dominates", {13, 31}, false, {attr("eps", 1.0)}, uniform(-1, 1)),
      // Sums of 2048 squares (~6000) in an f16 accumulator lose most terms.
      c("long_rows_16x2048", {16, 2048}),
      // Squares past f16's range (256^2 > 65504): an f16 accumulator overflows.
      c("large_magnitudes_squares_overflow_f16", {13, 31}, false, {}, away_from_zero(256, 2048)),
  };
}

std::vector<OpCase> batch_norm_cases(DLDataType dt) {
  auto c = [&](const char* name, Shape x, bool transposed = false,
               std::vector<AttrValue> attrs = {}) {
    Shape channel = {x[1]};
    return make_case(name,
                     {spec(x, dt, uniform(-3, 3), transposed), spec(channel, dt, uniform(-1, 1)),
                      spec(channel, dt, uniform(0.2, 2)), spec(channel, dt, uniform(0.5, 1.5)),
                      spec(channel, dt, uniform(-1, 1))},
                     std::move(attrs));
  };
  return {
      c("nchw_2x3x5x7", {2, 3, 5, 7}),
      c("nc_4x5", {4, 5}),
      c("eps_1e-2", {2, 3, 5, 7}, false, {attr("eps", 1e-2)}),
      c("empty_batch", {0, 3, 5, 7}),
      c("noncontiguous", {2, 3, 5, 7}, true),
      c("large_8x16x64x64", {8, 16, 64, 64}),
      // var + eps with eps as large as var: an ignored eps fails in bf16 too.
      make_case("default_eps_matters_tiny_variance",
                {spec({2, 3, 5, 7}, dt, uniform(-0.01, 0.01)),
                 spec({3}, dt, uniform(-0.001, 0.001)), spec({3}, dt, uniform(2e-6, 2e-5)),
                 spec({3}, dt, uniform(0.5, 1.5)), spec({3}, dt, uniform(-1, 1))}),
      c("eps_1_dominates", {2, 3, 5, 7}, false, {attr("eps", 1.0)}),
  };
}

std::vector<OpCase> conv2d_cases(DLDataType dt) {
  Domain d = uniform(-1, 1);
  struct Conv {
    const char* name;
    Shape x, w;
    bool bias;
    Shape stride, padding, dilation;
    int64_t groups;
    bool transposed;
  };
  const Conv table[] = {
      {"basic_3x3_bias", {1, 3, 9, 9}, {4, 3, 3, 3}, true, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {"no_bias", {2, 3, 8, 8}, {4, 3, 3, 3}, false, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {"stride2_padding1", {1, 3, 9, 9}, {5, 3, 3, 3}, true, {2, 2}, {1, 1}, {1, 1}, 1, false},
      {"dilation2", {1, 2, 11, 11}, {3, 2, 3, 3}, true, {1, 1}, {0, 0}, {2, 2}, 1, false},
      {"groups2", {2, 4, 8, 8}, {6, 2, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 2, false},
      {"depthwise", {1, 4, 7, 7}, {4, 1, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 4, false},
      {"asymmetric_1x3_stride2x1",
       {1, 3, 7, 9},
       {5, 3, 1, 3},
       true,
       {2, 1},
       {0, 1},
       {1, 1},
       1,
       false},
      {"pointwise_1x1", {2, 8, 5, 5}, {4, 8, 1, 1}, true, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {"empty_batch", {0, 3, 5, 5}, {4, 3, 3, 3}, true, {1, 1}, {0, 0}, {1, 1}, 1, false},
      {"noncontiguous_input", {1, 3, 9, 9}, {4, 3, 3, 3}, true, {1, 1}, {1, 1}, {1, 1}, 1, true},
      {"large_2x16x32x32_to_32",
       {2, 16, 32, 32},
       {32, 16, 3, 3},
       true,
       {1, 1},
       {1, 1},
       {1, 1},
       1,
       false},
  };
  std::vector<OpCase> cases;
  for (const Conv& v : table) {
    std::vector<InputSpec> in = {spec(v.x, dt, d, v.transposed), spec(v.w, dt, d)};
    if (v.bias) in.push_back(spec({v.w[0]}, dt, d));
    cases.push_back(make_case(v.name, std::move(in),
                              {attr("stride", v.stride), attr("padding", v.padding),
                               attr("dilation", v.dilation), attr("groups", v.groups)}));
  }
  // A long sum of positive products (fan-in 4608): an f16 or bf16
  // accumulator fails.
  cases.push_back(make_case(
      "large_fan_in_4608_positive",
      {spec({1, 512, 6, 6}, dt, uniform(0, 1)), spec({2, 512, 3, 3}, dt, uniform(0, 1))}));
  return cases;
}

std::vector<OpCase> pool_cases(const std::string& op, DLDataType dt) {
  struct Pool {
    const char* name;
    Shape x;
    Shape kernel, stride, padding;
    bool transposed;
  };
  const Pool table[] = {
      {"kernel2_default_stride", {2, 3, 8, 8}, {2, 2}, {}, {0, 0}, false},
      {"kernel3_stride2_padding1", {1, 2, 9, 9}, {3, 3}, {2, 2}, {1, 1}, false},
      {"asymmetric_2x3_stride1", {1, 2, 7, 8}, {2, 3}, {1, 1}, {0, 1}, false},
      {"odd_input_7x7_kernel2", {1, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}, false},
      {"empty_batch", {0, 3, 8, 8}, {2, 2}, {}, {0, 0}, false},
      {"noncontiguous_input", {2, 3, 8, 8}, {2, 2}, {}, {0, 0}, true},
      {"large_2x16x64x64", {2, 16, 64, 64}, {3, 3}, {2, 2}, {1, 1}, false},
  };
  std::vector<OpCase> cases;
  for (const Pool& p : table) {
    std::vector<AttrValue> attrs = {attr("kernel_size", p.kernel), attr("padding", p.padding)};
    if (!p.stride.empty()) attrs.push_back(attr("stride", p.stride));
    cases.push_back(make_case(p.name, {spec(p.x, dt, uniform(-4, 4), p.transposed)}, attrs));
  }
  if (op == "avg_pool2d") {
    cases.push_back(make_case("exclude_padding", {spec({1, 2, 9, 9}, dt, uniform(-4, 4))},
                              {attr("kernel_size", Shape{3, 3}), attr("stride", Shape{2, 2}),
                               attr("padding", Shape{1, 1}), attr("count_include_pad", false)}));
  }
  return cases;
}

std::vector<OpCase> attention_cases(DLDataType dt) {
  Domain d = uniform(-1, 1);
  auto c = [&](const char* name, Shape q, Shape k, Shape v, bool causal, double scale = 0,
               bool k_transposed = false) {
    return make_case(name, {spec(q, dt, d), spec(k, dt, d, k_transposed), spec(v, dt, d)},
                     {attr("causal", causal), attr("scale", scale)});
  };
  auto top_left = [&](const char* name, Shape q, Shape k, Shape v) {
    return make_case(name, {spec(q, dt, d), spec(k, dt, d), spec(v, dt, d)},
                     {attr("causal", true), attr("causal_alignment", "top_left")});
  };
  return {
      c("basic_lq7_lk11", {2, 3, 7, 16}, {2, 3, 11, 16}, {2, 3, 11, 8}, false),
      c("causal_square", {2, 3, 9, 16}, {2, 3, 9, 16}, {2, 3, 9, 16}, true),
      c("explicit_scale_0.5", {1, 2, 5, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}, false, 0.5),
      c("rank2", {5, 8}, {6, 8}, {6, 4}, false),
      c("rank3_causal", {4, 13, 8}, {4, 13, 8}, {4, 13, 8}, true),
      c("empty_batch", {0, 2, 5, 8}, {0, 2, 5, 8}, {0, 2, 5, 8}, false),
      c("noncontiguous_k", {2, 3, 7, 16}, {2, 3, 11, 16}, {2, 3, 11, 8}, false, 0, true),
      c("large_causal_2x8x64x64", {2, 8, 64, 64}, {2, 8, 64, 64}, {2, 8, 64, 64}, true),
      // The causal mask is aligned bottom-right: with fewer queries than keys
      // query i sees keys 0..i + Lk - Lq; with more, the first queries see none.
      c("causal_fewer_queries_lq5_lk9", {2, 3, 5, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}, true),
      c("causal_more_queries_lq9_lk5", {2, 3, 9, 16}, {2, 3, 5, 16}, {2, 3, 5, 8}, true),
      // Top-left alignment (PyTorch's is_causal, ONNX): query i sees keys
      // 0..i whatever Lk is; with Lq != Lk it differs from bottom-right for
      // every query, and with Lq = Lk the two agree.
      top_left("causal_top_left_fewer_queries_lq5_lk9", {2, 3, 5, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}),
      top_left("causal_top_left_more_queries_lq9_lk5", {2, 3, 9, 16}, {2, 3, 5, 16}, {2, 3, 5, 8}),
      top_left("causal_top_left_square", {2, 3, 9, 16}, {2, 3, 9, 16}, {2, 3, 9, 16}),
      make_case("causal_explicit_bottom_right_lq5_lk9",
                {spec({2, 3, 5, 16}, dt, d), spec({2, 3, 9, 16}, dt, d), spec({2, 3, 9, 8}, dt, d)},
                {attr("causal", true), attr("causal_alignment", "bottom_right")}),
      // Scores sharp enough that the scale's effect exceeds every tolerance.
      make_case("explicit_scale_4_sharp",
                {spec({1, 2, 5, 8}, dt, uniform(-2, 2)), spec({1, 2, 6, 8}, dt, uniform(-2, 2)),
                 spec({1, 2, 6, 8}, dt, uniform(-1, 1))},
                {attr("causal", false), attr("scale", 4.0)}),
  };
}

std::vector<OpCase> rotary_cases(DLDataType dt) {
  auto c = [&](const char* name, Shape x, bool interleaved, bool transposed = false) {
    Shape table = {x[x.size() - 2], x.back() / 2};
    return make_case(name,
                     {spec(x, dt, uniform(-2, 2), transposed), spec(table, dt, uniform(-1, 1)),
                      spec(table, dt, uniform(-1, 1))},
                     {attr("interleaved", interleaved)});
  };
  return {
      c("half_split_2x7x16", {2, 7, 16}, false),   c("interleaved_2x7x16", {2, 7, 16}, true),
      c("rank4_1x2x13x32", {1, 2, 13, 32}, false), c("rank4_interleaved", {1, 2, 13, 32}, true),
      c("empty_batch", {0, 7, 16}, false),         c("noncontiguous", {2, 7, 16}, false, true),
      c("large_8x256x128", {8, 256, 128}, false),
  };
}

std::vector<OpCase> cross_entropy_cases(DLDataType dt) {
  auto c = [&](const char* name, Shape logits, const char* reduction,
               DLDataType target_dtype = dtype::i64, bool transposed = false,
               Domain domain = uniform(-4, 4)) {
    return make_case(name,
                     {spec(logits, dt, domain, transposed),
                      spec({logits[0]}, target_dtype, integers(0, logits[1] - 1))},
                     {attr("reduction", reduction)});
  };
  return {
      c("mean_7x13", {7, 13}, "mean"),
      c("sum_7x13", {7, 13}, "sum"),
      c("none_7x13", {7, 13}, "none"),
      c("wide_3x257", {3, 257}, "mean"),
      c("single_class_is_zero", {5, 1}, "none"),
      c("empty_batch_none", {0, 13}, "none"),
      c("target_i32", {7, 13}, "mean", dtype::i32),
      c("noncontiguous_logits", {7, 13}, "none", dtype::i64, true),
      c("large_1024x1000", {1024, 1000}, "mean"),
      // A stable log-sum-exp: e^1000 overflows, and with logits 2000 apart a
      // log of the softmax is log(0).
      c("logits_near_plus_1000", {7, 13}, "none", dtype::i64, false, uniform(995, 1005)),
      c("logits_near_minus_1000", {7, 13}, "none", dtype::i64, false, uniform(-1005, -995)),
      c("logits_spread_pm1000", {7, 13}, "none", dtype::i64, false, uniform(-1000, 1000)),
      c("logits_spread_pm1000_mean", {7, 13}, "mean", dtype::i64, false, uniform(-1000, 1000)),
      c("long_rows_16x2048", {16, 2048}, "none"),
  };
}

}  // namespace cases

using namespace cases;  // NOLINT: the case tables' own helpers

Family op_family(const ops::OpSchema& schema) {
  const std::string op = schema.name;
  for (auto part :
       {grad_family, nn_grad_family, optimizer_family, layout_v2_family, math_v2_family}) {
    if (std::optional<Family> family = part(schema)) return *family;
  }
  if (in_set(op, {"add", "sub", "mul", "div", "reciprocal", "sqrt", "rsqrt"})) {
    return Family::kArith;
  }
  if (in_set(op, {"exp", "log", "sin", "cos", "tanh", "sigmoid", "gelu", "silu", "erf", "pow"})) {
    return Family::kTranscendental;
  }
  if (in_set(op, {"sum", "mean", "matmul", "matmul_w8", "conv2d"})) return Family::kAccumulate;
  if (op == "prod") return Family::kProduct;
  if (in_set(op, {"softmax", "log_softmax", "layer_norm", "rms_norm", "batch_norm", "avg_pool2d",
                  "scaled_dot_product_attention", "rotary_embedding", "cross_entropy"})) {
    return Family::kNormalized;
  }
  return Family::kExact;
}

std::vector<OpCase> op_cases(const ops::OpSchema& schema, DLDataType dt, uint32_t claimed) {
  const std::string op = schema.name;
  const std::string category = schema.category;
  for (auto part : {grad_cases, nn_grad_cases, optimizer_cases, layout_v2_cases, math_v2_cases}) {
    if (std::optional<std::vector<OpCase>> cases = part(schema, dt, claimed)) return *cases;
  }
  if (op == "fill") return fill_cases(dt);
  if (op == "copy") return copy_cases(dt);
  if (op == "cast") return cast_cases(dt, claimed & schema.dtypes);
  if (op == "transpose") return transpose_cases(dt);
  if (op == "concat") return concat_cases(dt);
  if (op == "slice") return slice_cases(dt);
  if (op == "index_select") return index_select_cases(dt);
  if (op == "gather") return gather_cases(dt);
  if (op == "embedding") return embedding_cases(dt);
  if (op == "where") return where_cases(dt);
  if (category == "unary") return unary_cases(op, dt);
  if (category == "binary" || category == "compare") return binary_cases(op, dt, category);
  if (schema.rule == ops::DtypeRule::kArgReduce) return arg_reduction_cases(op, dt);
  if (category == "reduction") return reduction_cases(op, dt);
  if (op == "matmul") return matmul_cases(dt);
  if (op == "matmul_w8") return matmul_w8_cases(dt);
  if (op == "softmax" || op == "log_softmax") return softmax_cases(dt);
  if (op == "layer_norm" || op == "rms_norm") return norm_cases(op, dt);
  if (op == "batch_norm") return batch_norm_cases(dt);
  if (op == "conv2d") return conv2d_cases(dt);
  if (op == "max_pool2d" || op == "avg_pool2d") return pool_cases(op, dt);
  if (op == "scaled_dot_product_attention") return attention_cases(dt);
  if (op == "rotary_embedding") return rotary_cases(dt);
  if (op == "cross_entropy") return cross_entropy_cases(dt);
  return {};  // an operator this suite version does not know: registered as a failing case
}

}  // namespace oar::conformance
