// The operator suite's cases for the operators of core/ops/schema_layout_v2.cc.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "conformance/suites/ops/op_case_parts.h"

namespace oar::conformance::cases {
namespace {

std::vector<OpCase> flip_cases(DLDataType dt) {
  Domain d = domain_for("flip", dt);
  auto c = [&](const char* name, Shape shape, std::vector<AttrValue> attrs,
               bool transposed = false) {
    return make_case(name, {spec(std::move(shape), dt, d, transposed)}, std::move(attrs));
  };
  auto axes = [](Shape a) { return std::vector<AttrValue>{attr("axes", std::move(a))}; };
  std::vector<OpCase> cases = {
      c("default_every_axis_13x31", {13, 31}, {}),
      c("axis0_13x31", {13, 31}, axes({0})),
      c("axis1_13x31", {13, 31}, axes({1})),
      c("negative_axis_rank3", {4, 7, 9}, axes({-1})),
      c("middle_axis_rank3", {4, 7, 9}, axes({1})),
      c("two_axes_rank3", {4, 7, 9}, axes({2, 0})),
      c("every_axis_listed_rank4", {2, 3, 5, 7}, axes({0, 1, 2, 3})),
      c("odd_7", {7}, axes({0})),
      c("scalar", {}, {}),
      c("empty", {0, 5}, axes({0})),
      c("noncontiguous_input", {13, 31}, axes({1}), true),
      c("large_1024x1024", kLargeRows, axes({0})),
  };
  if (is_float(dt)) {
    // Moved bit for bit: NaN, signed zeros and infinities included.
    cases.push_back(make_case(
        "special_values_bit_exact",
        {explicit_values({8}, dt, {kNaN, -0.0, 0.0, kInf, -kInf, 1.5, -2.5, 3.0})}, axes({0})));
  }
  return cases;
}

std::vector<OpCase> triangle_cases(DLDataType dt) {
  Domain d = domain_for("tril", dt);
  auto c = [&](const char* name, Shape shape, int64_t diagonal, bool transposed = false) {
    return make_case(name, {spec(std::move(shape), dt, d, transposed)},
                     {attr("diagonal", diagonal)});
  };
  std::vector<OpCase> cases = {
      c("square_7x7", {7, 7}, 0),
      c("wide_5x9", {5, 9}, 0),
      c("tall_9x5", {9, 5}, 0),
      c("diagonal_plus2_wide", {5, 9}, 2),
      c("diagonal_minus3_tall", {9, 5}, -3),
      c("diagonal_past_the_width", {5, 9}, 100),
      c("diagonal_past_the_height", {5, 9}, -100),
      c("diagonal_int64_max", {4, 6}, INT64_MAX),
      c("diagonal_int64_min", {4, 6}, INT64_MIN),
      c("batched_3x5x6", {3, 5, 6}, 1),
      c("rank4_2x3x4x5", {2, 3, 4, 5}, -1),
      c("single_column_13x1", {13, 1}, 0),
      c("empty_rows", {0, 4}, 0),
      c("empty_batch", {3, 0, 4}, 0),
      c("noncontiguous_input", {13, 31}, 2, true),
      c("large_1024x1024", kLargeRows, 0),
  };
  cases.push_back(
      make_case("default_diagonal_is_0", {spec({6, 6}, dt, d)}, std::vector<AttrValue>{}));
  if (is_float(dt)) {
    // The dropped triangle is 0, not x * 0 (NaN * 0 is NaN, inf * 0 too).
    std::vector<double> v;
    for (int i = 0; i < 16; ++i) v.push_back(i % 2 == 0 ? kNaN : (i % 3 == 0 ? kInf : -kInf));
    cases.push_back(make_case("nan_and_inf_are_zeroed_not_multiplied",
                              {explicit_values({4, 4}, dt, v)}, {attr("diagonal", int64_t(0))}));
  }
  return cases;
}

std::vector<OpCase> expand_cases(DLDataType dt) {
  Domain d = domain_for("expand", dt);
  auto c = [&](const char* name, Shape x, Shape shape, bool transposed = false) {
    return make_case(name, {spec(std::move(x), dt, d, transposed)},
                     {attr("shape", std::move(shape))});
  };
  return {
      c("row_to_13x31", {1, 31}, {13, 31}),
      c("column_to_13x31", {13, 1}, {13, 31}),
      c("new_leading_dimensions", {5}, {3, 4, 5}),
      c("middle_dimension_rank3", {4, 1, 9}, {4, 7, 9}),
      c("minus_one_keeps_x_size", {13, 1}, {-1, 7}),
      c("scalar_to_4x6", {}, {4, 6}),
      c("identity_5x7", {5, 7}, {5, 7}),
      c("to_empty", {1, 5}, {0, 5}),
      c("empty_input", {0, 1}, {2, 0, 3}),
      c("noncontiguous_input", {7, 9}, {4, 7, 9}, true),
      // More than 8192 input elements: the stream-order tests pick a smaller case.
      c("large_row_to_64x16384", {1, 16384}, {64, 16384}),
  };
}

std::vector<OpCase> pad_cases(DLDataType dt) {
  Domain d = domain_for("pad", dt);
  // A value every dtype holds exactly.
  const double value = is_float(dt) ? -2.25 : dt == dtype::boolean ? 1.0 : -3.0;
  auto c = [&](const char* name, Shape shape, Shape pads, const char* mode,
               bool transposed = false) {
    return make_case(name, {spec(std::move(shape), dt, d, transposed)},
                     {attr("pads", std::move(pads)), attr("mode", mode), attr("value", value)});
  };
  std::vector<OpCase> cases = {
      make_case("constant_defaults_13x31", {spec({13, 31}, dt, d)},
                {attr("pads", Shape{1, 2, 3, 4})}),
      c("constant_13x31", {13, 31}, {2, 0, 0, 5}, "constant"),
      c("constant_rank4_last_two", {2, 3, 5, 7}, {0, 0, 1, 2, 0, 0, 2, 1}, "constant"),
      c("reflect_odd_7", {7}, {3, 2}, "reflect"),
      c("reflect_13x31", {13, 31}, {4, 5, 2, 9}, "reflect"),
      c("reflect_pads_of_size_minus_1", {5, 6}, {4, 5, 4, 5}, "reflect"),
      c("reflect_rank4_last_two", {2, 3, 5, 7}, {0, 0, 1, 2, 0, 0, 2, 1}, "reflect"),
      c("replicate_13x31", {13, 31}, {3, 1, 2, 4}, "replicate"),
      c("replicate_pads_beyond_size", {3, 2}, {5, 7, 6, 4}, "replicate"),
      c("replicate_single_element", {1, 1}, {2, 3, 4, 1}, "replicate"),
      c("zero_pads_copy", {5, 7}, {0, 0, 0, 0}, "reflect"),
      c("scalar", {}, {}, "constant"),
      c("empty_input_constant", {0, 5}, {1, 0, 1, 2}, "constant"),
      c("empty_input_unpadded_axis_reflect", {0, 5}, {0, 1, 0, 2}, "reflect"),
      c("noncontiguous_input_reflect", {13, 31}, {2, 3, 4, 5}, "reflect", true),
      c("noncontiguous_input_replicate", {13, 31}, {1, 1, 1, 1}, "replicate", true),
      c("large_1024x1024_constant", kLargeRows, {1, 0, 0, 1}, "constant"),
  };
  if (is_float(dt)) {
    cases.push_back(make_case("nan_value", {spec({4, 5}, dt, d)},
                              {attr("pads", Shape{1, 1, 1, 1}), attr("value", kNaN)}));
    // Reflected and replicated elements are moved bit for bit.
    cases.push_back(make_case("special_values_reflect",
                              {explicit_values({6}, dt, {kNaN, -0.0, kInf, -kInf, 0.0, 1.5})},
                              {attr("pads", Shape{4, 5}), attr("mode", "reflect")}));
  }
  return cases;
}

// |index_dt| is the data dtype the suite iterates; the output dtype is the
// caller's, so every claimed one is tried (as cast's targets are).
std::vector<OpCase> one_hot_cases(DLDataType index_dt, uint32_t claimed) {
  std::vector<OpCase> cases;
  auto add = [&](std::string name, Shape index, int64_t classes, DLDataType to,
                 bool transposed = false) {
    OpCase c = make_case(std::move(name),
                         {spec(std::move(index), index_dt,
                               integers(0, std::max<int64_t>(classes - 1, 0)), transposed)},
                         {attr("num_classes", classes)});
    c.out_dtype = to;
    cases.push_back(std::move(c));
  };
  for (DLDataType to : ops::dtypes_in(claimed & ops::kAll)) {
    const std::string target = "to_" + dtype_name(to);
    add(target + "_odd_7", {7}, 5, to);
    add(target + "_2d_3x4_with_repeats", {3, 4}, 3, to);
    add(target + "_scalar", {}, 4, to);
    add(target + "_empty", {0}, 3, to);
    add(target + "_noncontiguous_index", {13, 31}, 6, to, true);
  }
  add("zero_classes", {0, 2}, 0, dtype::i64);
  add("one_class", {9}, 1, dtype::i64);
  add("large_4096x256", {4096}, 256, dtype::f32);
  return cases;
}

// Random indices repeat: scatter's last writer along the axis wins and
// scatter_add sums them. scatter_add's floats are small integers, so that
// every sum is exact in every dtype whatever the order of the additions.
std::vector<OpCase> scatter_cases(const std::string& op, DLDataType dt) {
  const bool add = op == "scatter_add";
  Domain d = add && is_float(dt) ? integers(-8, 8) : domain_for("gather", dt);
  auto c = [&](const char* name, Shape x, int64_t axis, Shape index, DLDataType index_dt,
               bool transposed = false) {
    const int64_t extent = x[size_t(axis < 0 ? axis + int64_t(x.size()) : axis)];
    return make_case(
        name,
        {spec(x, dt, d, transposed),
         spec(index, index_dt, integers(0, std::max<int64_t>(extent - 1, 0))), spec(index, dt, d)},
        {attr("axis", axis)});
  };
  std::vector<OpCase> cases = {
      c("axis0_7_of_13", {13, 31}, 0, {7, 31}, dtype::i64),
      c("axis1_more_indices_than_extent", {13, 31}, 1, {13, 50}, dtype::i64),
      c("negative_axis_rank3", {4, 7, 9}, -2, {4, 12, 9}, dtype::i64),
      c("index_smaller_off_the_axis", {13, 31}, 1, {5, 6}, dtype::i64),
      c("index_i32", {13, 31}, 0, {20, 31}, dtype::i32),
      c("rank1_odd_7", {7}, 0, {11}, dtype::i64),
      c("empty_index", {13, 31}, 1, {13, 0}, dtype::i64),
      c("noncontiguous_x", {13, 31}, 1, {13, 8}, dtype::i64, true),
      c("large_1024x1024", kLargeRows, 1, {1024, 512}, dtype::i64),
  };
  // Every index of a line the same: the order along the axis decides.
  cases.push_back(
      make_case("repeated_index_in_order",
                {spec({2, 4}, dt, d),
                 explicit_values({2, 6}, dtype::i64, {2, 2, 0, 2, 1, 0, 3, 3, 3, 1, 3, 3}),
                 explicit_values({2, 6}, dt, {1, 2, 3, 4, 5, 6, 1, 0, 1, 1, 0, 1})},
                {attr("axis", int64_t(1))}));
  return cases;
}

// No inputs: the output's dtype is the case's, and its length (which the
// harness allocates, as for fill) is worked out here from docs/ops.md:
// ceil((end - start) / step), 0 when not positive.
std::vector<OpCase> arange_cases(DLDataType dt) {
  struct Range {
    const char* name;
    double start, end, step;
    bool floats_only;
  };
  const Range table[] = {
      {"zero_to_10", 0, 10, 1, false},
      {"integer_step_3", -7, 20, 3, false},
      {"negative_step", 5, -6, -2, false},
      {"length_rounds_up", 0, 10, 3, false},
      {"end_equals_start_is_empty", 3, 3, 1, false},
      {"end_before_start_is_empty", 5, 1, 1, false},
      {"fractional_step", 0.5, 3.75, 0.25, true},
      {"fractional_length_rounds_up", 0, 1, 0.3, true},
      {"negative_fractional_step", 2, -3, -0.5, true},
      {"large_1M", 0, 1 << 20, 1, false},
      // Integers past f32's 24 bits: a kernel that computes in float is off.
      {"beyond_f32_precision", 1e9 + 1, 1e9 + 3001, 3, false},
      {"large_1M_fine_step", -1, 1023, 1.0 / 1024, true},
  };
  std::vector<OpCase> cases;
  for (const Range& r : table) {
    if (r.floats_only && !is_float(dt)) continue;
    OpCase c =
        make_case(r.name, {}, {attr("start", r.start), attr("end", r.end), attr("step", r.step)});
    c.out_dtype = dt;
    const double length = std::ceil((r.end - r.start) / r.step);
    c.fill_shape = {length > 0 ? int64_t(length) : 0};
    cases.push_back(std::move(c));
  }
  OpCase defaults = make_case("default_start_and_step", {}, {attr("end", 7.0)});
  defaults.out_dtype = dt;
  defaults.fill_shape = {7};
  cases.push_back(std::move(defaults));
  return cases;
}

}  // namespace

std::optional<std::vector<OpCase>> layout_v2_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                   uint32_t claimed) {
  const std::string op = schema.name;
  if (op == "flip") return flip_cases(dtype);
  if (op == "tril" || op == "triu") return triangle_cases(dtype);
  if (op == "expand") return expand_cases(dtype);
  if (op == "pad") return pad_cases(dtype);
  if (op == "one_hot") return one_hot_cases(dtype, claimed);
  if (op == "scatter" || op == "scatter_add") return scatter_cases(op, dtype);
  if (op == "arange") return arange_cases(dtype);
  return std::nullopt;
}

std::optional<Family> layout_v2_family(const ops::OpSchema& schema) {
  // start + i * step: one rounding in the device's compute type (integers exact).
  if (std::string(schema.name) == "arange") return Family::kArith;
  if (in_set(schema.name,
             {"flip", "tril", "triu", "expand", "pad", "one_hot", "scatter", "scatter_add"}))
    return Family::kExact;
  return std::nullopt;
}

}  // namespace oar::conformance::cases
