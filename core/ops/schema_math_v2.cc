// Schema entries and shape rules of the operator set v2 math: sort/topk, scans, logsumexp,
// remainder, logical and bitwise operators, clip (issue 14). docs/ops.md states their semantics.
#include "core/ops/schema_parts.h"

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
  s.push_back(scan("cumprod", "y[i] = x[0] * ... * x[i] along axis (exclusive: up to x[i-1])"));
}

}  // namespace oar::ops::detail
