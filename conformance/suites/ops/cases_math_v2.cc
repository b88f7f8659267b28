// The operator suite's cases for the operators of core/ops/schema_math_v2.cc.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "conformance/suites/ops/op_case_parts.h"

namespace oar::conformance::cases {
namespace {

// The binary operators take the v1 binary shape cases (binary_shapes()), the
// large one only for some dtypes: the kernels are one loop for every dtype,
// and 1M-element cases of every dtype would cost CI a minute on four plugins.
bool large_case(const char* name, DLDataType dt) {
  return std::string(name) != "large_1M" || dt == dtype::f32 || dt == dtype::i32 ||
         dt == dtype::boolean;
}

uint64_t int_min(DLDataType dt) { return dt == dtype::i32 ? 0x80000000ull : 0x8000000000000000ull; }
uint64_t int_max(DLDataType dt) { return dt == dtype::i32 ? 0x7fffffffull : 0x7fffffffffffffffull; }
uint64_t minus(DLDataType dt, uint64_t v) {  // -v in the dtype's width
  return dt == dtype::i32 ? (0 - v) & 0xffffffffull : 0 - v;
}

std::vector<OpCase> unary_cases(DLDataType dt) {
  struct UnaryShape {
    const char* name;
    Shape shape;
    bool transposed;
  };
  const UnaryShape shapes[] = {
      {"scalar", {}, false},
      {"empty", {0, 5}, false},
      {"odd_7", {7}, false},
      {"prime_13x31", {13, 31}, false},
      {"rank4_2x3x5x7", {2, 3, 5, 7}, false},
      {"noncontiguous", {13, 31}, true},
      {"large_1M", kLarge1d, false},
  };
  std::vector<OpCase> cases;
  const Domain d = integers(-(int64_t(1) << 30), int64_t(1) << 30);
  for (const UnaryShape& s : shapes) {
    if (!large_case(s.name, dt)) continue;
    cases.push_back(make_case(s.name, {spec(s.shape, dt, d, s.transposed)}));
  }
  if (dt == dtype::boolean) {
    // A stored nonzero byte is true: ~2 is 0xfd, not false.
    cases.push_back(make_case("nonzero_bytes_are_true", {bit_values(dt, {0, 1, 2, 0x80, 0xff})}));
  } else {
    cases.push_back(
        make_case("ends_of_the_range",
                  {bit_values(dt, {int_min(dt), int_max(dt), minus(dt, 1), 0, 1, 0x55555555ull})}));
  }
  return cases;
}

std::vector<OpCase> binary_cases(const std::string& op, DLDataType dt) {
  std::vector<OpCase> cases;
  const bool fl = is_float(dt);
  const bool division = op == "remainder" || op == "fmod";
  Domain da = integers(-(int64_t(1) << 30), int64_t(1) << 30), db = da;
  if (division) {
    // Integers: divisors of both signs, and zero (whose result is defined).
    da = fl ? uniform(-8, 8) : integers(-1000, 1000);
    db = fl ? away_from_zero(0.5, 4) : integers(-20, 20);
  }
  for (const BinaryShape& s : binary_shapes()) {
    if (!large_case(s.name, dt) || (dt == dtype::boolean && op.rfind("bitwise", 0) == 0 &&
                                    std::string(s.name) == "large_1M")) {
      continue;
    }
    cases.push_back(
        make_case(s.name, {spec(s.a, dt, da, s.a_transposed), spec(s.b, dt, db, s.b_transposed)}));
  }
  if (!division) {
    if (dt == dtype::boolean) {
      // Nonzero bytes are true: 2 & 1 is 0 and 2 ^ 1 is 3, which are wrong.
      cases.push_back(make_case("nonzero_bytes_are_true", {bit_values(dt, {2, 2, 0x80, 0, 1, 0}),
                                                           bit_values(dt, {1, 2, 0xff, 2, 0, 0})}));
    } else {
      cases.push_back(make_case(
          "ends_of_the_range",
          {bit_values(dt, {int_min(dt), int_max(dt), minus(dt, 1), int_min(dt), 0x55555555ull}),
           bit_values(dt, {int_max(dt), minus(dt, 1), int_min(dt), 1, 0xaaaaaaaaull})}));
    }
    return cases;
  }
  if (fl) {
    const double n = kNaN, i = kInf;
    // Every sign combination, zero dividends of both signs, infinite divisors
    // (remainder: a finite a of the other sign gives b), zero divisors and
    // infinite dividends (NaN), NaN.
    cases.push_back(make_case(
        "signs_zeros_inf_nan",
        {explicit_values(
             {18}, dt,
             {5.5, -5.5, 5.5, -5.5, 6, -6, 0.0, -0.0, 0.0, -0.0, 3, -3, 3, -3, 2, i, n, 1}),
         explicit_values({18}, dt,
                         {2, 2, -2, -2, 3, -3, 2, 2, -2, -2, i, i, -i, -i, 0.0, 2, 2, n})}));
    // Quotients far beyond the precision of the dtype: fmod is exact (C), so
    // a - trunc(a / b) * b computed in the dtype is not close.
    std::vector<double> big, small;
    if (dt == dtype::f16) {
      big = {65504, 1000.5, -30000, 40000, -777.25, 60000};
      small = {0.3, 0.000977, 7.1, -0.0999, 0.71, -3.3};
    } else if (dt == dtype::bf16) {
      big = {3.0e38, 1.0e20, -7.5e30, 123456, -1.0e10, 2.5e15};
      small = {0.3, 1.1e-5, 7.1, -0.0999, 0.71, -3.3};
    } else {
      big = {3.0e38, 1.0e20, -7.5e30, 16777215, -1.0e10, 2.5e15};
      small = {0.3, 1.1e-30, 7.1, -0.0999, 0.71, -3.3};
    }
    cases.push_back(make_case("large_quotients_exact",
                              {explicit_values({6}, dt, big), explicit_values({6}, dt, small)}));
  } else {
    // Division by zero gives 0, INT_MIN by -1 gives 0 (C traps there), and
    // the ends of the range with every sign.
    const uint64_t m1 = minus(dt, 1), min = int_min(dt), max = int_max(dt);
    cases.push_back(make_case(
        "zero_divisor_int_min_by_minus_one",
        {bit_values(dt, {7, minus(dt, 7), 0, min, min, min, max, max, minus(dt, 7), 7, 7, min}),
         bit_values(dt, {0, 0, 0, m1, 3, max, minus(dt, 2), min, 2, minus(dt, 2), 7, min})}));
  }
  return cases;
}

std::vector<OpCase> clip_cases(DLDataType dt) {
  std::vector<OpCase> cases;
  const bool fl = is_float(dt);
  const Domain x = fl ? uniform(-8, 8) : integers(-1000, 1000);
  const Domain lo = fl ? uniform(-4, 0) : integers(-500, 0);
  const Domain hi = fl ? uniform(0, 4) : integers(0, 500);
  struct ClipShape {
    const char* name;
    Shape x, bounds;
    bool transposed;
  };
  const ClipShape shapes[] = {
      {"scalar", {}, {}, false},
      {"scalar_bounds_13x31", {13, 31}, {}, false},
      {"empty", {0, 5}, {}, false},
      {"odd_7", {7}, {7}, false},
      {"per_column_bounds_13x31", {13, 31}, {31}, false},
      {"per_row_bounds_13x31", {13, 31}, {13, 1}, false},
      {"noncontiguous", {13, 31}, {13, 31}, true},
      {"large_1M", kLarge1d, {}, false},
  };
  for (const ClipShape& s : shapes) {
    if (!large_case(s.name, dt)) continue;
    cases.push_back(make_case(s.name, {spec(s.x, dt, x, s.transposed), spec(s.bounds, dt, lo),
                                       spec(s.bounds, dt, hi, s.transposed)}));
  }
  // Bounds broadcast against each other to a larger shape than x's.
  cases.push_back(make_case("bounds_broadcast_past_x",
                            {spec({5}, dt, x), spec({7, 1}, dt, lo), spec({1, 5}, dt, hi)}));
  // min > max: max wins (min(max(x, min), max)).
  cases.push_back(make_case(
      "min_above_max_gives_max",
      {spec({7, 5}, dt, x), spec({}, dt, integers(5, 5)), spec({}, dt, integers(-5, -5))}));
  if (fl) {
    const double n = kNaN, i = kInf;
    cases.push_back(make_case("nan_inf", {explicit_values({7}, dt, {n, 1, 1, i, -i, 3, -3}),
                                          explicit_values({7}, dt, {0, n, 0, 0, -i, -i, -i}),
                                          explicit_values({7}, dt, {2, 2, n, i, 0, i, i})}));
  } else {
    const uint64_t min = int_min(dt), max = int_max(dt);
    cases.push_back(make_case("ends_of_the_range", {bit_values(dt, {min, max, 5, max, min}),
                                                    bit_values(dt, {min, 0, max, min, min}),
                                                    bit_values(dt, {max, max, max, min, 3})}));
  }
  return cases;
}

std::vector<OpCase> scan_cases(const std::string& op, DLDataType dt) {
  const bool product = op == "cumprod";
  const bool fl = is_float(dt);
  // Products: factors near 1 (floats) or +-1 (integers) stay far from
  // overflow over thousands of terms; the wrap cases below overflow on purpose.
  const Domain d = product ? (fl ? away_from_zero(0.9, 1.1) : away_from_zero(1, 1))
                           : (fl ? uniform(-2, 2) : integers(-1000, 1000));
  std::vector<OpCase> cases;
  auto add = [&](const char* name, Shape shape, int64_t axis, bool exclusive = false,
                 bool reverse = false, bool transposed = false,
                 std::optional<Domain> domain = std::nullopt) {
    OpCase c =
        make_case(name, {spec(shape, dt, domain.value_or(d), transposed)},
                  {attr("axis", axis), attr("exclusive", exclusive), attr("reverse", reverse)});
    const int64_t a = axis < 0 ? axis + int64_t(shape.size()) : axis;
    c.k = shape.empty() ? 1 : std::max<int64_t>(shape[size_t(a)], 1);
    cases.push_back(std::move(c));
  };
  add("scalar", {}, 0);
  add("scalar_exclusive", {}, 0, true);
  add("empty_rows", {0, 5}, 1);
  add("empty_axis", {5, 0}, 1, true);
  add("odd_7", {7}, 0);
  add("rows_13x31", {13, 31}, -1);
  add("axis0_13x31", {13, 31}, 0);
  add("middle_axis_7x13x5", {7, 13, 5}, 1);
  add("noncontiguous_13x31", {13, 31}, -1, false, false, true);
  add("exclusive_13x31", {13, 31}, 1, true);
  add("reverse_13x31", {13, 31}, 1, false, true);
  add("exclusive_reverse_7x13x5", {7, 13, 5}, 1, true, true);
  add("reverse_axis0_noncontiguous", {13, 31}, 0, false, true, true);
  // Long rows of one sign: a running f16/bf16 accumulator loses the small
  // terms, a plain f32 one drifts past the accumulate tolerance.
  add("long_rows_16x2048", {16, 2048}, -1, false, false, false,
      product ? d : (fl ? uniform(0, dt == dtype::f16 ? 0.03 : 1) : d));
  if (fl && !product) {
    // 2047 terms of 0.25 after one whose spacing is 1 or more (1024 in f16
    // and bf16, 2^24 in f32 and f64): a running accumulator of the dtype
    // never moves (the exact last sum is 1024 + 511.75).
    std::vector<double> v(2048, 0.25);
    v[0] = (dt == dtype::f16 || dt == dtype::bf16) ? 1024 : 16777216;
    cases.push_back(make_case("small_terms_after_a_large_one", {explicit_values({2048}, dt, v)},
                              {attr("axis", int64_t(0))}));
  }
  if (fl) {
    const double n = kNaN, i = kInf;
    // An infinity stays in the rest of the row (inf - inf is NaN); a NaN
    // spreads to the end of its row only.
    cases.push_back(
        make_case("nan_inf_rows",
                  {explicit_values({3, 5}, dt, {1, i, 2, -i, 3, 2, 0.0, i, 3, 1, n, 1, 2, 3, 4})},
                  {attr("axis", int64_t(-1))}));
  } else {
    // Two's complement wrap-around: 20! (and 25!) leave 32 (64) bits, and a
    // sum of 2^30s leaves 32 bits.
    std::vector<double> v;
    for (int k = 1; k <= 25; ++k) v.push_back(product ? k : 1073741824.0);
    if (dt == dtype::i64 && !product) {
      cases.push_back(
          make_case("wraps", {bit_values(dt, {0x7fffffffffffffffull, 1, 0x7fffffffffffffffull, 5})},
                    {attr("axis", int64_t(0))}));
    } else {
      cases.push_back(
          make_case("wraps", {explicit_values({25}, dt, v)}, {attr("axis", int64_t(0))}));
    }
  }
  return cases;
}

std::vector<OpCase> logsumexp_cases(DLDataType dt) {
  struct Reduction {
    const char* name;
    Shape shape;
    bool transposed;
    std::vector<int64_t> axes;  // empty: every axis
    bool keepdim;
    Domain domain;
  };
  const Domain d = uniform(-5, 5);
  const Reduction shapes[] = {
      {"scalar_all_axes", {}, false, {}, false, d},
      {"all_axes_13x31", {13, 31}, false, {}, false, d},
      {"all_axes_keepdim", {13, 31}, false, {}, true, d},
      {"axis0_13x31", {13, 31}, false, {0}, false, d},
      {"last_axis_keepdim_7x13x5", {7, 13, 5}, false, {-1}, true, d},
      {"axes_0_2_7x13x5", {7, 13, 5}, false, {0, 2}, false, d},
      {"empty_output", {0, 5}, false, {1}, false, d},
      {"empty_axis_gives_minus_inf", {5, 0}, false, {1}, false, d},
      {"noncontiguous_axis0", {13, 31}, true, {0}, false, d},
      {"rows_256x1024", {256, 1024}, false, {-1}, false, d},
      // Without the shift by the maximum e^1000 is inf and e^-1000 is 0.
      {"near_plus_1000", {13, 31}, false, {-1}, false, uniform(995, 1005)},
      {"near_minus_1000", {13, 31}, false, {-1}, false, uniform(-1005, -995)},
      {"spread_pm1000", {13, 31}, false, {-1}, false, uniform(-1000, 1000)},
  };
  std::vector<OpCase> cases;
  for (const Reduction& r : shapes) {
    cases.push_back(make_case(r.name, {spec(r.shape, dt, r.domain, r.transposed)},
                              {attr("axes", r.axes), attr("keepdim", r.keepdim)}));
  }
  // Rows: all -inf (-inf), a +inf (inf), NaN with inf (NaN), -inf beside a
  // finite maximum (ignored), two equal large values (m + log 2).
  const double n = kNaN, i = kInf;
  cases.push_back(make_case(
      "special_rows",
      {explicit_values({6, 3}, dt,
                       {-i, -i, -i, 1, i, 2, n, i, 1, -i, 0.0, -i, 1000, 1000, -i, -7, -i, -7})},
      {attr("axes", Shape{1})}));
  return cases;
}

// sort, argsort and topk: every case compares the values and the i64
// indices exactly, so ties (few distinct values), NaN, infinities and signed
// zeros test the order the spec states, not just a sorted multiset.
std::vector<OpCase> order_cases(const std::string& op, DLDataType dt) {
  const bool topk = op == "topk";
  const char* flag = topk ? "largest" : "descending";
  const Domain d = is_float(dt) ? uniform(-8, 8) : integers(-1000, 1000);
  const Domain ties = integers(-3, 3);
  std::vector<OpCase> cases;
  auto add = [&](const char* name, Shape shape, int64_t axis, bool direction, int64_t k,
                 Domain domain, bool transposed = false) {
    std::vector<AttrValue> attrs = {attr("axis", axis), attr(flag, direction)};
    if (topk) attrs.push_back(attr("k", k));
    cases.push_back(make_case(name, {spec(shape, dt, domain, transposed)}, attrs));
  };
  const bool first = topk;  // topk's default: the largest first
  if (!topk) add("scalar", {}, 0, false, 0, d);
  add("empty_rows", {0, 5}, -1, first, 2, d);
  add("odd_7", {7}, 0, first, 3, d);
  add("rows_13x31", {13, 31}, -1, first, 5, d);
  add("rows_13x31_other_direction", {13, 31}, -1, !first, 5, d);
  add("axis0_13x31", {13, 31}, 0, first, 4, d);
  add("middle_axis_7x13x5", {7, 13, 5}, 1, !first, 13, d);
  add("noncontiguous_13x31", {13, 31}, -1, first, 7, d, true);
  // Few distinct values: equal values keep their index order, both ways.
  add("ties_13x31", {13, 31}, -1, first, 9, ties);
  add("ties_13x31_other_direction", {13, 31}, -1, !first, 9, ties);
  add("ties_axis0_31x13", {31, 13}, 0, first, 31, ties);
  add("long_rows_8x2048", {8, 2048}, -1, first, 100, d);
  if (topk) {
    add("k_0", {13, 31}, -1, true, 0, d);
    add("k_1", {13, 31}, -1, false, 1, d);
    add("k_all_rows_of_one", {13, 1}, -1, true, 1, d);
  } else {
    add("empty_axis", {5, 0}, -1, false, 0, d);
  }
  if (is_float(dt)) {
    // NaN above +inf (last ascending, first descending), NaNs and equal
    // zeros of either sign in index order.
    const double n = kNaN, i = kInf;
    for (bool direction : {false, true}) {
      std::vector<AttrValue> attrs = {attr("axis", int64_t(-1)), attr(flag, direction)};
      if (topk) attrs.push_back(attr("k", int64_t(6)));
      cases.push_back(
          make_case(direction ? "nan_inf_zeros_other_direction" : "nan_inf_zeros",
                    {explicit_values({2, 10}, dt, {n,    1, -i, 0.0, i,   n,  -0.0, 1,  -1, 0.0,  //
                                                   -0.0, n, 2,  i,   0.0, -i, i,    -2, n,  -0.0})},
                    attrs));
    }
  } else {
    // The ends of the range: i64 values a double cannot tell apart.
    const uint64_t min = dt == dtype::i32 ? 0x80000000ull : 0x8000000000000000ull;
    const uint64_t max = dt == dtype::i32 ? 0x7fffffffull : 0x7fffffffffffffffull;
    std::vector<AttrValue> attrs = {attr("axis", int64_t(0)), attr(flag, true)};
    if (topk) attrs.push_back(attr("k", int64_t(4)));
    cases.push_back(make_case("ends_of_the_range",
                              {bit_values(dt, {max - 1, min, max, min + 1, 0, max, max - 1})},
                              attrs));
  }
  return cases;
}

}  // namespace

std::optional<std::vector<OpCase>> math_v2_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                 uint32_t claimed) {
  (void)claimed;
  const std::string op = schema.name;
  if (op == "clip") return clip_cases(dtype);
  if (in_set(op, {"remainder", "fmod", "logical_and", "logical_or", "logical_xor", "bitwise_and",
                  "bitwise_or", "bitwise_xor"})) {
    return binary_cases(op, dtype);
  }
  if (in_set(op, {"logical_not", "bitwise_not"})) return unary_cases(dtype);
  if (in_set(op, {"cumsum", "cumprod"})) return scan_cases(op, dtype);
  if (op == "logsumexp") return logsumexp_cases(dtype);
  if (in_set(op, {"sort", "argsort", "topk"})) return order_cases(op, dtype);
  return std::nullopt;
}

std::optional<Family> math_v2_family(const ops::OpSchema& schema) {
  const std::string op = schema.name;
  // remainder adds b to fmod's exact result: one rounding (kArith).
  if (op == "remainder") return Family::kArith;
  if (op == "cumsum") return Family::kAccumulate;     // every output a sum of terms
  if (op == "cumprod") return Family::kProduct;       // rtol grows with the row length
  if (op == "logsumexp") return Family::kNormalized;  // as softmax and cross_entropy
  if (in_set(op,
             {"sort", "argsort", "topk", "clip", "fmod", "logical_and", "logical_or", "logical_xor",
              "logical_not", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not"})) {
    return Family::kExact;
  }
  return std::nullopt;
}

}  // namespace oar::conformance::cases
