// Schema entries and shape rules of the pointwise, row and index gradients (issue 14).
// docs/ops.md states their semantics ("Gradients").
#include <algorithm>

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

// embedding_grad(dy, index): dy is index.shape + [D]; dweight is [num_embeddings, D].
std::vector<Shape> embedding_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                  const Attrs& attrs) {
  const Shape &dy = in[0], &index = in[1];
  if (dy.size() != index.size() + 1 || !std::equal(index.begin(), index.end(), dy.begin())) {
    fail(schema,
         "dy " + shape_text(dy) + " must be index.shape + [D] (index " + shape_text(index) + ")");
  }
  const int64_t rows = attrs.get_int("num_embeddings");
  if (rows < 0) fail(schema, "num_embeddings must be >= 0, not " + std::to_string(rows));
  return {{rows, dy.back()}};
}

// cross_entropy_grad(dloss, logits, target): dloss is the loss's shape.
std::vector<Shape> cross_entropy_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                      const Attrs& attrs) {
  const Shape &dloss = in[0], &logits = in[1], &target = in[2];
  expect_rank(schema, logits, 2, "logits");
  expect_rank(schema, target, 1, "target");
  if (target[0] != logits[0]) fail(schema, "target must have one entry per row of logits");
  const std::string reduction = attrs.get_string("reduction");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    fail(schema, "reduction must be mean, sum or none, not " + reduction);
  }
  const Shape loss = reduction == "none" ? Shape{logits[0]} : Shape{};
  if (dloss != loss) {
    fail(schema, "dloss must have the loss's shape " + shape_text(loss) + " for reduction " +
                     reduction + ", not " + shape_text(dloss));
  }
  return {logits};
}

// rotary_embedding_grad(dy, cos, sin): rotary_embedding's shapes.
std::vector<Shape> rotary_rule(const OpSchema& schema, const std::vector<Shape>& in,
                               const Attrs& attrs) {
  (void)attrs;
  const Shape& dy = in[0];
  if (dy.size() < 2 || dy.back() % 2 != 0) fail(schema, "dy must be [..., S, D] with even D");
  const Shape table = {dy[dy.size() - 2], dy.back() / 2};
  if (in[1] != table || in[2] != table) {
    fail(schema, "cos and sin must have shape " + shape_text(table));
  }
  return {dy};
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
  OpSchema embedding{"embedding_grad",
                     "grad",
                     {{"dy"}, {"index"}},
                     {"dweight"},
                     {required("num_embeddings", kInt)},
                     kFloats,
                     DtypeRule::kIndexed,
                     1,
                     "dweight[v, :] = sum of dy[p, :] over the positions p with index[p] = v"};
  embedding.shape_fn = embedding_rule;
  s.push_back(embedding);
  OpSchema cross_entropy{"cross_entropy_grad",
                         "grad",
                         {{"dloss"}, {"logits"}, {"target"}},
                         {"dlogits"},
                         {string_attr("reduction", "mean")},
                         kFloats,
                         DtypeRule::kIndexed,
                         2,
                         "dlogits[n, :] = g_n * (softmax(logits[n, :]) - onehot(target[n]))"};
  cross_entropy.shape_fn = cross_entropy_rule;
  s.push_back(cross_entropy);
  OpSchema rotary{"rotary_embedding_grad",
                  "grad",
                  {{"dy"}, {"cos"}, {"sin"}},
                  {"dx"},
                  {bool_attr("interleaved", false)},
                  kFloats,
                  DtypeRule::kSame,
                  -1,
                  "dx = dy rotated back: each pair by minus its angle"};
  rotary.shape_fn = rotary_rule;
  s.push_back(rotary);
}

}  // namespace oar::ops::detail
