// Schema entries and shape rules of the gradients of the normalizations, conv2d, pooling and
// attention (issue 14). docs/ops.md states their semantics ("Gradients of the neural-network
// operators").
#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include "core/ops/schema_parts.h"
#include "core/util/checked_math.h"

namespace oar::ops::detail {
namespace {

// layer_norm_grad / rms_norm_grad(dy, x, weight): dx like x; dweight (and
// dbias) like weight.
std::vector<Shape> norm_grad_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                  const Attrs&) {
  const Shape& x = in[1];
  if (x.empty()) fail(schema, "x needs at least 1 dimension");
  if (in[0] != x) {
    fail(schema, "dy " + shape_text(in[0]) + " must have x's shape " + shape_text(x));
  }
  const Shape row = {x.back()};
  if (in[2] != row) fail(schema, "weight must have shape " + shape_text(row));
  std::vector<Shape> out = {x, row};
  if (schema.outputs.size() == 3) out.push_back(row);
  return out;
}

// max_pool2d_grad / avg_pool2d_grad(dy, x): dy has the forward output's shape
// (the forward operator's rule), dx has x's.
std::vector<Shape> pool_grad_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                  const Attrs& attrs) {
  const Shape& x = in[1];
  expect_rank(schema, x, 4, "x");
  std::array<int64_t, 2> kernel = attrs.get_pair("kernel_size", {});
  std::array<int64_t, 2> stride = attrs.get_pair("stride", {kernel[0], kernel[1]});
  std::array<int64_t, 2> padding = attrs.get_pair("padding", {0, 0});
  for (int i = 0; i < 2; ++i) {
    if (kernel[i] < 1 || stride[i] < 1 || padding[i] < 0 || padding[i] > kernel[i] / 2) {
      fail(schema, "kernel_size and stride must be >= 1, 0 <= padding <= kernel_size / 2");
    }
  }
  Shape y = {x[0], x[1], pool_or_conv_extent(schema, x[2], kernel[0], stride[0], padding[0], 1),
             pool_or_conv_extent(schema, x[3], kernel[1], stride[1], padding[1], 1)};
  if (y[2] < 1 || y[3] < 1) fail(schema, "the window is larger than the padded input");
  if (in[0] != y) {
    fail(schema,
         "dy " + shape_text(in[0]) + " must have the forward output's shape " + shape_text(y));
  }
  return {x};
}

// The conv2d attributes shared by both gradients; groups/stride/dilation/
// padding as conv2d checks them.
struct ConvGeometry {
  std::array<int64_t, 2> stride, padding, dilation;
  int64_t groups;
};
ConvGeometry conv_geometry(const OpSchema& schema, const Attrs& attrs) {
  ConvGeometry g{attrs.get_pair("stride", {1, 1}), attrs.get_pair("padding", {0, 0}),
                 attrs.get_pair("dilation", {1, 1}), attrs.get_int("groups")};
  for (int i = 0; i < 2; ++i) {
    if (g.stride[i] < 1 || g.dilation[i] < 1 || g.padding[i] < 0) {
      fail(schema, "stride and dilation must be >= 1 and padding >= 0");
    }
  }
  if (g.groups < 1) fail(schema, "groups must be >= 1");
  return g;
}

// An exact [H, W] (or [KH, KW]) attribute: two non-negative values.
std::array<int64_t, 2> size_pair(const OpSchema& schema, const Attrs& attrs, const char* name,
                                 int64_t minimum) {
  std::vector<int64_t> v = attrs.get_ints(name);
  if (v.size() != 2 || v[0] < minimum || v[1] < minimum) {
    fail(schema, std::string(name) + " must hold two values >= " + std::to_string(minimum));
  }
  return {v[0], v[1]};
}

// dy must be what conv2d gives for x [N, C, H, W] and weight [O, C/groups, KH, KW].
void check_conv_dy(const OpSchema& schema, const Shape& dy, int64_t n, int64_t c, int64_t h,
                   int64_t w, int64_t o, int64_t kh, int64_t kw, const ConvGeometry& g) {
  if (c % g.groups != 0 || o % g.groups != 0) {
    fail(schema, "channels " + std::to_string(c) + " and " + std::to_string(o) +
                     " must be multiples of groups " + std::to_string(g.groups));
  }
  Shape y = {n, o, pool_or_conv_extent(schema, h, kh, g.stride[0], g.padding[0], g.dilation[0]),
             pool_or_conv_extent(schema, w, kw, g.stride[1], g.padding[1], g.dilation[1])};
  if (y[2] < 1 || y[3] < 1) fail(schema, "the kernel is larger than the padded input");
  if (dy != y) {
    fail(schema, "dy " + shape_text(dy) + " must have the forward output's shape " + shape_text(y));
  }
}

// conv2d_grad_input(dy, weight) -> dx [N, C, H, W] with input_size [H, W].
std::vector<Shape> conv_grad_input_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                        const Attrs& attrs) {
  expect_rank(schema, in[0], 4, "dy");
  expect_rank(schema, in[1], 4, "weight");
  const ConvGeometry g = conv_geometry(schema, attrs);
  const std::array<int64_t, 2> size = size_pair(schema, attrs, "input_size", 0);
  const Shape& w = in[1];
  int64_t c = 0;
  if (!util::checked_mul(w[1], g.groups, &c)) fail(schema, "C overflows");
  check_conv_dy(schema, in[0], in[0][0], c, size[0], size[1], w[0], w[2], w[3], g);
  return {{in[0][0], c, size[0], size[1]}};
}

// conv2d_grad_weight(dy, x) -> dweight [O, C/groups, KH, KW] with kernel_size [KH, KW].
std::vector<Shape> conv_grad_weight_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                         const Attrs& attrs) {
  expect_rank(schema, in[0], 4, "dy");
  expect_rank(schema, in[1], 4, "x");
  const ConvGeometry g = conv_geometry(schema, attrs);
  const std::array<int64_t, 2> k = size_pair(schema, attrs, "kernel_size", 1);
  const Shape& x = in[1];
  check_conv_dy(schema, in[0], x[0], x[1], x[2], x[3], in[0][1], k[0], k[1], g);
  return {{in[0][1], x[1] / g.groups, k[0], k[1]}};
}

OpSchema conv_grad(const char* name, const char* second, const char* size_attr,
                   const char* summary) {
  OpSchema s{name,
             "nn_grad",
             {{"dy"}, {second}},
             {std::string_view(second) == "weight" ? "dx" : "dweight"},
             {required(size_attr, kIntArray), ints_attr("stride", {1, 1}),
              ints_attr("padding", {0, 0}), ints_attr("dilation", {1, 1}), int_attr("groups", 1)},
             kFloats,
             DtypeRule::kSame,
             -1,
             summary};
  s.shape_fn = std::string_view(second) == "weight" ? conv_grad_input_rule : conv_grad_weight_rule;
  return s;
}

// scaled_dot_product_attention_grad(dy, q, k, v) -> dq, dk, dv: the forward
// operator's shapes, dy [..., Lq, Dv].
std::vector<Shape> attention_grad_rule(const OpSchema& schema, const std::vector<Shape>& in,
                                       const Attrs& attrs) {
  const Shape &dy = in[0], &q = in[1], &k = in[2], &v = in[3];
  if (q.size() < 2 || k.size() != q.size() || v.size() != q.size() || dy.size() != q.size()) {
    fail(schema, "dy, q, k and v must have one rank >= 2");
  }
  const size_t r = q.size();
  Shape y = q;
  y[r - 1] = v[r - 1];
  if (k[r - 1] != q[r - 1] || v[r - 2] != k[r - 2] ||
      !std::equal(q.begin(), q.end() - 2, k.begin()) ||
      !std::equal(q.begin(), q.end() - 2, v.begin()) || dy != y) {
    fail(schema, "expects dy [..., Lq, Dv], q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv], got " +
                     shape_text(dy) + ", " + shape_text(q) + ", " + shape_text(k) + ", " +
                     shape_text(v));
  }
  const std::string alignment = attrs.get_string("causal_alignment");
  if (alignment != "bottom_right" && alignment != "top_left") {
    fail(schema, "causal_alignment must be bottom_right or top_left, not " + alignment);
  }
  return {q, k, v};
}

OpSchema norm_grad(const char* name, bool with_bias, double eps, const char* summary) {
  std::vector<const char*> outputs = {"dx", "dweight"};
  if (with_bias) outputs.push_back("dbias");
  OpSchema s{name,
             "nn_grad",
             {{"dy"}, {"x"}, {"weight"}},
             outputs,
             {float_attr("eps", eps)},
             kFloats,
             DtypeRule::kSame,
             -1,
             summary};
  s.shape_fn = norm_grad_rule;
  return s;
}

OpSchema pool_grad(const char* name, bool average, const char* summary) {
  std::vector<AttrSpec> attrs = {required("kernel_size", kIntArray), ints_attr("stride", {}),
                                 ints_attr("padding", {0, 0})};
  if (average) attrs.push_back(bool_attr("count_include_pad", true));
  OpSchema s{name, "nn_grad", {{"dy"}, {"x"}}, {"dx"}, attrs, kFloats, DtypeRule::kSame,
             -1,   summary};
  s.shape_fn = pool_grad_rule;
  return s;
}

}  // namespace

void add_nn_grad_schemas(std::vector<OpSchema>& s) {
  s.push_back(norm_grad("layer_norm_grad", true, 1e-5,
                        "dx, dweight, dbias of layer_norm from dy, x, weight (mean and rstd "
                        "recomputed)"));
  s.push_back(norm_grad("rms_norm_grad", false, 1e-6,
                        "dx, dweight of rms_norm from dy, x, weight (rstd recomputed)"));
  s.push_back(pool_grad("max_pool2d_grad", false,
                        "dx of max_pool2d: dy to the first maximum of each window (row-major)"));
  s.push_back(pool_grad("avg_pool2d_grad", true,
                        "dx of avg_pool2d: dy / divisor to every in-bounds window position"));
  s.push_back(conv_grad("conv2d_grad_input", "weight", "input_size",
                        "dx of conv2d from dy and weight; input_size is x's [H, W]"));
  s.push_back(conv_grad("conv2d_grad_weight", "x", "kernel_size",
                        "dweight of conv2d from dy and x; kernel_size is weight's [KH, KW]"));
  OpSchema attention{"scaled_dot_product_attention_grad",
                     "nn_grad",
                     {{"dy"}, {"q"}, {"k"}, {"v"}},
                     {"dq", "dk", "dv"},
                     {bool_attr("causal", false), float_attr("scale", 0.0),
                      string_attr("causal_alignment", "bottom_right")},
                     kFloats,
                     DtypeRule::kSame,
                     -1,
                     "dq, dk, dv of scaled_dot_product_attention (softmax recomputed)"};
  attention.shape_fn = attention_grad_rule;
  s.push_back(attention);
}

}  // namespace oar::ops::detail
