// Schema entries and shape rules of the operator set v2 math: sort/topk, scans, logsumexp,
// remainder, logical and bitwise operators, clip (issue 14). docs/ops.md states their semantics.
#include <string>

#include "core/ops/schema_parts.h"
#include "oar/dtype.hpp"

namespace oar::ops::detail {
namespace {

// Elementwise: the NumPy broadcast of every input's shape.
std::vector<Shape> broadcast_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                  const Attrs&) {
  return {broadcast(schema, in)};
}

// The category "math" keeps these operators out of the v1 categories that
// plugins register kernels for by category (unary, binary, compare).
OpSchema elementwise(const char* name, std::vector<TensorSpec> inputs, uint32_t dtypes,
                     const char* summary) {
  OpSchema s{name, "math", std::move(inputs), {"y"}, {}, dtypes, DtypeRule::kSame, -1, summary};
  s.shape_fn = broadcast_rule;
  return s;
}

// Scans: x's shape; |axis| names a dimension (rank 0: axis 0 only).
std::vector<Shape> scan_rule(const OpSchema& schema, const std::vector<Shape>& in,
                             const Attrs& attrs) {
  normalize_axis(schema, attrs.get_int("axis"), int64_t(in[0].size()));
  return {in[0]};
}

OpSchema scan(const char* name, const char* summary) {
  OpSchema s{name,
             "math",
             {{"x"}},
             {"y"},
             {int_attr("axis", -1), bool_attr("exclusive", false), bool_attr("reverse", false)},
             kNumbers,
             DtypeRule::kSame,
             -1,
             summary};
  s.shape_fn = scan_rule;
  return s;
}

std::vector<Shape> reduce_rule(const OpSchema& schema, const std::vector<Shape>& in,
                               const Attrs& attrs) {
  return {reduce_shape(schema, in[0], attrs.get_ints("axes"), attrs.get_bool("keepdim"))};
}

// sort: values and indices of x's shape; argsort: the indices.
std::vector<Shape> sort_rule(const OpSchema& schema, const std::vector<Shape>& in,
                             const Attrs& attrs) {
  normalize_axis(schema, attrs.get_int("axis"), int64_t(in[0].size()));
  return std::vector<Shape>(schema.outputs.size(), in[0]);
}

// topk: x's shape with k along the axis (x needs a dimension), for both outputs.
std::vector<Shape> topk_rule(const OpSchema& schema, const std::vector<Shape>& in,
                             const Attrs& attrs) {
  if (in[0].empty()) fail(schema, "x needs at least 1 dimension");
  const int64_t axis = normalize_axis(schema, attrs.get_int("axis"), int64_t(in[0].size()));
  const int64_t k = attrs.get_int("k");
  if (k < 0 || k > in[0][size_t(axis)]) {
    fail(schema, "k " + std::to_string(k) + " is out of range [0, " +
                     std::to_string(in[0][size_t(axis)]) + "] for x " + shape_text(in[0]));
  }
  Shape out = in[0];
  out[size_t(axis)] = k;
  return {out, out};
}

// Values of x's dtype and i64 indices.
void check_values_indices(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                          const DLTensor* outputs, size_t num_outputs) {
  (void)num_inputs;
  if (num_outputs != 2) fail(schema, "takes 2 outputs (values, indices)");
  if ((dtype_bit(inputs[0].dtype) & schema.dtypes) == 0) {
    fail(schema, "does not take " + dtype_name(inputs[0].dtype));
  }
  if (!(outputs[0].dtype == inputs[0].dtype)) fail(schema, "values must have x's dtype");
  if (!(outputs[1].dtype == dtype::i64)) fail(schema, "indices must be i64");
}
std::vector<DLDataType> values_indices(const OpSchema&, DLDataType input) {
  return {input, dtype::i64};
}

}  // namespace

void add_math_v2_schemas(std::vector<OpSchema>& s) {
  s.push_back(elementwise("clip", {{"x"}, {"min"}, {"max"}}, kNumbers,
                          "y = min(max(x, min), max), broadcast; NaN in any operand gives NaN"));
  s.push_back(
      elementwise("remainder", {{"a"}, {"b"}}, kNumbers,
                  "y = a - floor(a / b) * b: the sign of b (Python); integer b = 0 gives 0"));
  s.push_back(elementwise("fmod", {{"a"}, {"b"}}, kNumbers,
                          "y = a - trunc(a / b) * b: the sign of a (C); integer b = 0 gives 0"));
  s.push_back(elementwise("logical_and", {{"a"}, {"b"}}, kBool, "y = a && b (bool)"));
  s.push_back(elementwise("logical_or", {{"a"}, {"b"}}, kBool, "y = a || b (bool)"));
  s.push_back(elementwise("logical_xor", {{"a"}, {"b"}}, kBool, "y = a != b (bool)"));
  s.push_back(elementwise("logical_not", {{"x"}}, kBool, "y = !x (bool)"));
  s.push_back(elementwise("bitwise_and", {{"a"}, {"b"}}, kInts | kBool, "y = a & b"));
  s.push_back(elementwise("bitwise_or", {{"a"}, {"b"}}, kInts | kBool, "y = a | b"));
  s.push_back(elementwise("bitwise_xor", {{"a"}, {"b"}}, kInts | kBool, "y = a ^ b"));
  s.push_back(elementwise("bitwise_not", {{"x"}}, kInts | kBool, "y = ~x (bool: !x)"));
  s.push_back(scan("cumsum", "y[i] = x[0] + ... + x[i] along axis (exclusive: up to x[i-1])"));
  s.push_back(scan("cumprod", "y[i] = x[0] * ... * x[i] along axis (exclusive: up to x[i-1])"));
  OpSchema logsumexp{"logsumexp",
                     "math",
                     {{"x"}},
                     {"y"},
                     {ints_attr("axes", {}), bool_attr("keepdim", false)},
                     kFloats,
                     DtypeRule::kSame,
                     -1,
                     "y = m + log(sum(exp(x - m))) over axes, m the maximum; -inf for none"};
  logsumexp.shape_fn = reduce_rule;
  s.push_back(logsumexp);
  OpSchema sort{"sort",
                "math",
                {{"x"}},
                {"values", "indices"},
                {int_attr("axis", -1), bool_attr("descending", false)},
                kNumbers,
                DtypeRule::kCustom,
                -1,
                "values, indices = x sorted along axis (stable; NaN above everything)"};
  sort.shape_fn = sort_rule;
  sort.check_dtypes_fn = check_values_indices;
  sort.output_dtypes_fn = values_indices;
  s.push_back(sort);
  OpSchema argsort{"argsort",
                   "math",
                   {{"x"}},
                   {"indices"},
                   {int_attr("axis", -1), bool_attr("descending", false)},
                   kNumbers,
                   DtypeRule::kArgReduce,
                   -1,
                   "indices = sort(x).indices"};
  argsort.shape_fn = sort_rule;
  s.push_back(argsort);
  OpSchema topk{"topk",
                "math",
                {{"x"}},
                {"values", "indices"},
                {required("k", kInt), int_attr("axis", -1), bool_attr("largest", true)},
                kNumbers,
                DtypeRule::kCustom,
                -1,
                "the k largest (or smallest) along axis, sorted, ties by index"};
  topk.shape_fn = topk_rule;
  topk.check_dtypes_fn = check_values_indices;
  topk.output_dtypes_fn = values_indices;
  s.push_back(topk);
}

}  // namespace oar::ops::detail
