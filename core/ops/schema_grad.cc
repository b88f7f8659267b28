// Schema entries and shape rules of the pointwise, row and index gradients (issue 14).
// docs/ops.md states their semantics ("Gradients").
#include "core/ops/schema_parts.h"

namespace oar::ops::detail {
namespace {

// dx has the shape of both inputs, which must be equal: a gradient never
// broadcasts (the caller reduces a broadcast gradient with sum).
std::vector<Shape> same_shape_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                   const Attrs& attrs) {
  if (in[0] != in[1]) {
    fail(schema, std::string(schema.inputs[0].name) + " " + shape_text(in[0]) + " and " +
                     schema.inputs[1].name + " " + shape_text(in[1]) +
                     " must have one shape (gradients do not broadcast)");
  }
  if (std::string_view(schema.name) == "gelu_grad") {
    const std::string approximate = attrs.get_string("approximate");
    if (approximate != "none" && approximate != "tanh") {
      fail(schema, "approximate must be none or tanh, not " + approximate);
    }
  }
  return {in[0]};
}

// Along |axis| (a rank-0 input accepts 0 only, like softmax).
std::vector<Shape> row_rule(const OpSchema& schema, const std::vector<Shape>& in,
                            const Attrs& attrs) {
  std::vector<Shape> out = same_shape_rule(schema, in, attrs);
  const int64_t axis = attrs.get_int("axis");
  if (in[0].empty()) {
    if (axis != 0) fail(schema, "a rank-0 input takes axis 0 only");
  } else {
    normalize_axis(schema, axis, int64_t(in[0].size()));
  }
  return out;
}

// The gradient of a pointwise operator: inputs dy and the forward input x
// (or its output y, |second|), output dx.
OpSchema pointwise(const char* name, const char* second, const char* summary) {
  OpSchema s{name, "grad", {{"dy"}, {second}}, {"dx"}, {}, kFloats, DtypeRule::kSame, -1, summary};
  s.shape_fn = same_shape_rule;
  return s;
}

OpSchema row(const char* name, const char* summary) {
  OpSchema s{
      name, "grad", {{"dy"}, {"y"}}, {"dx"}, {int_attr("axis", -1)}, kFloats, DtypeRule::kSame,
      -1,   summary};
  s.shape_fn = row_rule;
  return s;
}

}  // namespace

void add_grad_schemas(std::vector<OpSchema>& s) {
  s.push_back(pointwise("relu_grad", "x", "dx = dy where x > 0, else 0"));
  s.push_back(pointwise("sigmoid_grad", "y", "dx = dy * y * (1 - y), y = sigmoid(x)"));
  s.push_back(pointwise("tanh_grad", "y", "dx = dy * (1 - y^2), y = tanh(x)"));
  s.push_back(pointwise("silu_grad", "x", "dx = dy * s * (1 + x * (1 - s)), s = sigmoid(x)"));
  OpSchema gelu = pointwise("gelu_grad", "x", "dx = dy * gelu'(x), erf or tanh form");
  gelu.attrs = {string_attr("approximate", "none")};
  s.push_back(gelu);
  s.push_back(row("softmax_grad", "dx = y * (dy - sum(dy * y)) along axis, y = softmax(x)"));
  s.push_back(row("log_softmax_grad", "dx = dy - exp(y) * sum(dy) along axis, y = log_softmax(x)"));
}

}  // namespace oar::ops::detail
