// The operator set's schema table and shape inference. docs/ops.md states the
// semantics each entry implements; this file is the single source of the
// operators' names, arities, attributes, dtypes and shapes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/ops/schema_parts.h"
#include "core/util/checked_math.h"
#include "oar/error.hpp"
#include "oar/ops.hpp"

namespace oar::ops {
namespace detail {
namespace {

// matmul_w8: x [..., K] of a float dtype, weight [N, K] i8, scale [N] of x's
// dtype; y [..., N] of x's dtype.
std::vector<Shape> matmul_w8_shape(const OpSchema& schema, const std::vector<Shape>& in,
                                   const Attrs&) {
  const Shape &x = in[0], &w = in[1], &scale = in[2];
  if (x.empty()) fail(schema, "x needs rank >= 1");
  expect_rank(schema, w, 2, "weight");
  expect_rank(schema, scale, 1, "scale");
  if (w[1] != x.back()) {
    fail(schema, "weight " + shape_text(w) + " must be [N, K] with K = " +
                     std::to_string(x.back()) + " (x's last dimension)");
  }
  if (scale[0] != w[0]) {
    fail(schema, "scale " + shape_text(scale) + " must be [N] with N = " + std::to_string(w[0]));
  }
  Shape y = x;
  y.back() = w[0];
  return {y};
}

void matmul_w8_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t,
                      const DLTensor* outputs, size_t) {
  const DLDataType t = inputs[0].dtype;
  if ((dtype_bit(t) & schema.dtypes) == 0) fail(schema, "does not take x of " + dtype_name(t));
  if (!(inputs[1].dtype == dtype::i8)) fail(schema, "weight must be i8");
  if (!(inputs[2].dtype == t)) fail(schema, "scale must have x's dtype " + dtype_name(t));
  if (!(outputs[0].dtype == t)) fail(schema, "the output must be " + dtype_name(t));
}

std::vector<DLDataType> matmul_w8_output(const OpSchema&, DLDataType input) { return {input}; }

}  // namespace

std::vector<OpSchema> build_schemas() {
  const uint32_t kSigned = kFloats | kInts;
  std::vector<OpSchema> s;
  // Creation and layout.
  s.push_back({"fill",
               "creation",
               {},
               {"y"},
               {required("value", kFloat)},
               kAll | kSmallInts,
               DtypeRule::kSame,
               -1,
               "y[...] = value (converted to y's dtype)"});
  s.push_back({"copy",
               "layout",
               {{"x"}},
               {"y"},
               {},
               kAll | kSmallInts,
               DtypeRule::kSame,
               -1,
               "y = x, any strides in, contiguous out"});
  s.push_back({"cast",
               "layout",
               {{"x"}},
               {"y"},
               {},
               kAll | kSmallInts,
               DtypeRule::kCast,
               -1,
               "y = x converted to y's dtype"});
  s.push_back({"transpose",
               "layout",
               {{"x"}},
               {"y"},
               {required("perm", kIntArray)},
               kAll | kSmallInts,
               DtypeRule::kSame,
               -1,
               "y = x with dimensions permuted: y.shape[i] = x.shape[perm[i]]"});
  s.push_back({"concat",
               "layout",
               {{"xs", false, true}},
               {"y"},
               {int_attr("axis", 0)},
               kAll | kSmallInts,
               DtypeRule::kSame,
               -1,
               "y = inputs joined along axis"});
  s.push_back({"slice",
               "layout",
               {{"x"}},
               {"y"},
               {required("axis", kInt), int_attr("start", 0), int_attr("end", INT64_MAX),
                int_attr("step", 1)},
               kAll | kSmallInts,
               DtypeRule::kSame,
               -1,
               "y = x[start:end:step] along axis (Python rules)"});
  s.push_back({"index_select",
               "layout",
               {{"x"}, {"index"}},
               {"y"},
               {int_attr("axis", 0)},
               kAll | kSmallInts,
               DtypeRule::kIndexed,
               1,
               "y = x[..., index[j], ...] along axis; index is 1-D"});
  s.push_back({"gather",
               "layout",
               {{"x"}, {"index"}},
               {"y"},
               {required("axis", kInt)},
               kAll | kSmallInts,
               DtypeRule::kIndexed,
               1,
               "y[i][j][k] = x[i][index[i][j][k]][k] (for axis 1); index has x's rank"});
  s.push_back({"embedding",
               "layout",
               {{"weight"}, {"index"}},
               {"y"},
               {},
               kNumbers,
               DtypeRule::kIndexed,
               1,
               "y[..., :] = weight[index[...], :]"});
  // Elementwise unary.
  s.push_back(unary("neg", kSigned | kSmallInts, "y = -x"));
  s.push_back(unary("abs", kSigned | kSmallInts, "y = |x|"));
  s.push_back(unary("exp", kFloats, "y = e^x"));
  s.push_back(unary("log", kFloats, "y = ln x"));
  s.push_back(unary("sqrt", kFloats, "y = sqrt(x)"));
  s.push_back(unary("rsqrt", kFloats, "y = 1 / sqrt(x)"));
  s.push_back(unary("sin", kFloats, "y = sin x"));
  s.push_back(unary("cos", kFloats, "y = cos x"));
  s.push_back(unary("tanh", kFloats, "y = tanh x"));
  s.push_back(unary("sigmoid", kFloats, "y = 1 / (1 + e^-x)"));
  s.push_back(unary("relu", kSigned, "y = max(x, 0)"));
  OpSchema gelu = unary("gelu", kFloats, "y = x * Phi(x), or its tanh approximation");
  gelu.attrs = {string_attr("approximate", "none")};
  s.push_back(gelu);
  s.push_back(unary("silu", kFloats, "y = x * sigmoid(x)"));
  s.push_back(unary("erf", kFloats, "y = erf x"));
  s.push_back(unary("floor", kFloats, "y = floor x"));
  s.push_back(unary("ceil", kFloats, "y = ceil x"));
  s.push_back(unary("reciprocal", kFloats, "y = 1 / x"));
  // Elementwise binary, NumPy broadcasting.
  s.push_back(binary("add", kNumbers | kSmallInts, "y = a + b"));
  s.push_back(binary("sub", kNumbers | kSmallInts, "y = a - b"));
  s.push_back(binary("mul", kNumbers | kSmallInts, "y = a * b"));
  s.push_back(binary("div", kFloats, "y = a / b"));
  s.push_back(binary("maximum", kNumbers | kSmallInts, "y = max(a, b), NaN if either is NaN"));
  s.push_back(binary("minimum", kNumbers | kSmallInts, "y = min(a, b), NaN if either is NaN"));
  s.push_back(binary("pow", kFloats, "y = a ^ b"));
  s.push_back(compare("eq", kAll | kSmallInts, "y = a == b"));
  s.push_back(compare("ne", kAll | kSmallInts, "y = a != b"));
  s.push_back(compare("lt", kNumbers | kSmallInts, "y = a < b"));
  s.push_back(compare("le", kNumbers | kSmallInts, "y = a <= b"));
  s.push_back(compare("gt", kNumbers | kSmallInts, "y = a > b"));
  s.push_back(compare("ge", kNumbers | kSmallInts, "y = a >= b"));
  s.push_back({"where",
               "binary",
               {{"condition"}, {"a"}, {"b"}},
               {"y"},
               {},
               kAll | kSmallInts,
               DtypeRule::kWhere,
               -1,
               "y = condition ? a : b, broadcast together"});
  // Reductions.
  s.push_back(reduction("sum", kNumbers, "y = sum of x over axes"));
  s.push_back(reduction("mean", kFloats, "y = mean of x over axes"));
  s.push_back(reduction("max", kNumbers, "y = max of x over axes (NaN wins)"));
  s.push_back(reduction("min", kNumbers, "y = min of x over axes (NaN wins)"));
  s.push_back(reduction("prod", kNumbers, "y = product of x over axes"));
  s.push_back(arg_reduction("argmax", "index of the first maximum along axis"));
  s.push_back(arg_reduction("argmin", "index of the first minimum along axis"));
  // Neural network.
  s.push_back({"matmul",
               "nn",
               {{"a"}, {"b"}},
               {"y"},
               {bool_attr("transpose_a", false), bool_attr("transpose_b", false)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y[..., m, n] = sum_k a[..., m, k] * b[..., k, n]"});
  OpSchema matmul_w8{"matmul_w8",
                     "nn",
                     {{"x"}, {"weight"}, {"scale"}},
                     {"y"},
                     {},
                     kFloats,
                     DtypeRule::kCustom,
                     -1,
                     "y[..., n] = scale[n] * sum_k x[..., k] * weight[n, k]; weight i8 [N, K]"};
  matmul_w8.shape_fn = &matmul_w8_shape;
  matmul_w8.check_dtypes_fn = &matmul_w8_dtypes;
  matmul_w8.output_dtypes_fn = &matmul_w8_output;
  s.push_back(std::move(matmul_w8));
  s.push_back({"softmax",
               "nn",
               {{"x"}},
               {"y"},
               {int_attr("axis", -1)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y = exp(x - max) / sum exp(x - max) along axis"});
  s.push_back({"log_softmax",
               "nn",
               {{"x"}},
               {"y"},
               {int_attr("axis", -1)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y = x - max - log(sum exp(x - max)) along axis"});
  s.push_back({"layer_norm",
               "nn",
               {{"x"}, {"weight"}, {"bias"}},
               {"y"},
               {float_attr("eps", 1e-5)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y = (x - mean) / sqrt(var + eps) * weight + bias over the last dimension"});
  s.push_back({"rms_norm",
               "nn",
               {{"x"}, {"weight"}},
               {"y"},
               {float_attr("eps", 1e-6)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y = x / sqrt(mean(x^2) + eps) * weight over the last dimension"});
  s.push_back({"batch_norm",
               "nn",
               {{"x"}, {"mean"}, {"var"}, {"weight"}, {"bias"}},
               {"y"},
               {float_attr("eps", 1e-5)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y = (x - mean[c]) / sqrt(var[c] + eps) * weight[c] + bias[c], inference"});
  s.push_back({"conv2d",
               "nn",
               {{"x"}, {"weight"}, {"bias", true}},
               {"y"},
               {ints_attr("stride", {1, 1}), ints_attr("padding", {0, 0}),
                ints_attr("dilation", {1, 1}), int_attr("groups", 1)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "2-D cross-correlation, NCHW, zero padding"});
  s.push_back(
      {"max_pool2d",
       "nn",
       {{"x"}},
       {"y"},
       {required("kernel_size", kIntArray), ints_attr("stride", {}), ints_attr("padding", {0, 0})},
       kFloats,
       DtypeRule::kSame,
       -1,
       "max over windows, NCHW; padding never wins"});
  s.push_back({"avg_pool2d",
               "nn",
               {{"x"}},
               {"y"},
               {required("kernel_size", kIntArray), ints_attr("stride", {}),
                ints_attr("padding", {0, 0}), bool_attr("count_include_pad", true)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "mean over windows, NCHW"});
  s.push_back({"scaled_dot_product_attention",
               "nn",
               {{"q"}, {"k"}, {"v"}},
               {"y"},
               {bool_attr("causal", false), float_attr("scale", 0.0),
                string_attr("causal_alignment", "bottom_right")},
               kFloats,
               DtypeRule::kSame,
               -1,
               "y = softmax(q k^T * scale [+ causal mask]) v; scale 0 means 1/sqrt(d); the mask "
               "is aligned bottom_right (default) or top_left"});
  s.push_back({"rotary_embedding",
               "nn",
               {{"x"}, {"cos"}, {"sin"}},
               {"y"},
               {bool_attr("interleaved", false)},
               kFloats,
               DtypeRule::kSame,
               -1,
               "rotates pairs of the last dimension by per-position angles"});
  s.push_back({"cross_entropy",
               "nn",
               {{"logits"}, {"target"}},
               {"loss"},
               {string_attr("reduction", "mean")},
               kFloats,
               DtypeRule::kIndexed,
               1,
               "loss = -log_softmax(logits)[n, target[n]], reduced by mean, sum or none"});
  add_grad_schemas(s);
  add_nn_grad_schemas(s);
  add_optimizer_schemas(s);
  add_layout_v2_schemas(s);
  add_math_v2_schemas(s);
  return s;
}

[[noreturn]] void fail(const OpSchema& schema, const std::string& what) {
  throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(schema.name) + ": " + what);
}

std::string shape_text(const Shape& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

Shape shape_of(const DLTensor& t) { return Shape(t.shape, t.shape + t.ndim); }

int64_t normalize_axis(const OpSchema& schema, int64_t axis, int64_t ndim) {
  int64_t normalized = axis < 0 ? axis + ndim : axis;
  if (normalized < 0 || normalized >= std::max<int64_t>(ndim, 1)) {
    fail(schema, "axis " + std::to_string(axis) + " is out of range for " + std::to_string(ndim) +
                     " dimensions");
  }
  return normalized;
}

Shape broadcast(const OpSchema& schema, const std::vector<Shape>& shapes) {
  size_t rank = 0;
  for (const Shape& s : shapes) rank = std::max(rank, s.size());
  Shape out(rank, 1);
  for (const Shape& s : shapes) {
    for (size_t i = 0; i < s.size(); ++i) {
      int64_t& o = out[rank - s.size() + i];
      int64_t d = s[i];
      if (d == o || d == 1) continue;
      if (o == 1) {
        o = d;
        continue;
      }
      std::string all;
      for (const Shape& t : shapes) all += (all.empty() ? "" : " and ") + shape_text(t);
      fail(schema, "shapes " + all + " do not broadcast");
    }
  }
  return out;
}

Shape reduce_shape(const OpSchema& schema, const Shape& x, std::vector<int64_t> axes,
                   bool keepdim) {
  int64_t ndim = int64_t(x.size());
  std::vector<bool> reduced(x.size(), axes.empty());
  for (int64_t axis : axes) {
    int64_t a = normalize_axis(schema, axis, ndim);
    if (ndim > 0) reduced[size_t(a)] = true;
  }
  Shape out;
  for (size_t i = 0; i < x.size(); ++i) {
    if (!reduced[i])
      out.push_back(x[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

void expect_rank(const OpSchema& schema, const Shape& s, size_t rank, const char* what) {
  if (s.size() != rank) {
    fail(schema, std::string(what) + " must have " + std::to_string(rank) + " dimensions, not " +
                     shape_text(s));
  }
}

// (in + 2 * pad - dilation * (kernel - 1) - 1) / stride + 1, the output
// extent of a convolution or pooling window; arguments are checked positive
// (pad non-negative) by the caller. Refuses attributes whose arithmetic wraps.
int64_t pool_or_conv_extent(const OpSchema& schema, int64_t in, int64_t kernel, int64_t stride,
                            int64_t pad, int64_t dilation) {
  int64_t padded = 0;
  int64_t reach = 0;
  int64_t span = 0;
  if (!util::checked_mul(pad, int64_t(2), &padded) || !util::checked_add(in, padded, &padded) ||
      !util::checked_mul(dilation, kernel - 1, &reach) ||
      !util::checked_sub(padded, reach, &span)) {
    fail(schema, "kernel size, padding and dilation overflow 64-bit sizes");
  }
  // span - 1 cannot wrap: padded >= 0 and reach >= 0.
  return (span - 1) / stride + 1;
}

Shape infer_one(const OpSchema& schema, const std::vector<Shape>& in, const Attrs& attrs) {
  const std::string_view name = schema.name;
  const std::string_view category = schema.category;
  if (name == "gelu") {
    std::string approximate = attrs.get_string("approximate");
    if (approximate != "none" && approximate != "tanh") {
      fail(schema, "approximate must be none or tanh, not " + approximate);
    }
  }
  if (category == "unary" || name == "copy" || name == "cast") return in[0];
  if (category == "binary" || category == "compare") return broadcast(schema, in);
  if (name == "transpose") {
    std::vector<int64_t> perm = attrs.get_ints("perm");
    if (perm.size() != in[0].size()) fail(schema, "perm must name every dimension once");
    Shape out(perm.size());
    std::vector<bool> seen(perm.size(), false);
    for (size_t i = 0; i < perm.size(); ++i) {
      int64_t p = normalize_axis(schema, perm[i], int64_t(perm.size()));
      if (seen[size_t(p)]) fail(schema, "perm must name every dimension once");
      seen[size_t(p)] = true;
      out[i] = in[0][size_t(p)];
    }
    return out;
  }
  const bool indexes_a_dimension =
      name == "concat" || name == "slice" || name == "index_select" || name == "gather";
  if (indexes_a_dimension && in[0].empty()) fail(schema, "x must have at least 1 dimension");
  if (name == "concat") {
    int64_t axis = normalize_axis(schema, attrs.get_int("axis"), int64_t(in[0].size()));
    Shape out = in[0];
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i].size() != out.size()) fail(schema, "inputs must have one rank");
      for (size_t d = 0; d < out.size(); ++d) {
        if (int64_t(d) == axis) continue;
        if (in[i][d] != out[d]) {
          fail(schema, "input " + std::to_string(i) + " has shape " + shape_text(in[i]) +
                           ", which differs from " + shape_text(in[0]) + " off the axis");
        }
      }
      if (!util::checked_add(out[size_t(axis)], in[i][size_t(axis)], &out[size_t(axis)])) {
        fail(schema, "the joined dimension overflows 64-bit sizes");
      }
    }
    return out;
  }
  if (name == "slice") {
    Shape out = in[0];
    int64_t axis = normalize_axis(schema, attrs.get_int("axis"), int64_t(out.size()));
    int64_t step = attrs.get_int("step");
    if (step <= 0) fail(schema, "step must be positive");
    int64_t n = out[size_t(axis)];
    auto clamp = [n](int64_t v) { return v < 0 ? std::max<int64_t>(v + n, 0) : std::min(v, n); };
    int64_t start = clamp(attrs.get_int("start"));
    int64_t end = clamp(attrs.get_int("end"));
    // ceil((end - start) / step), written so that a step near 2^63 cannot wrap.
    out[size_t(axis)] = end > start ? (end - start - 1) / step + 1 : 0;
    return out;
  }
  if (name == "index_select") {
    expect_rank(schema, in[1], 1, "index");
    Shape out = in[0];
    out[size_t(normalize_axis(schema, attrs.get_int("axis"), int64_t(out.size())))] = in[1][0];
    return out;
  }
  if (name == "gather") {
    if (in[1].size() != in[0].size()) fail(schema, "index must have x's rank");
    int64_t axis = normalize_axis(schema, attrs.get_int("axis"), int64_t(in[0].size()));
    for (size_t d = 0; d < in[0].size(); ++d) {
      if (int64_t(d) != axis && in[1][d] > in[0][d]) {
        fail(schema, "index " + shape_text(in[1]) + " is larger than x " + shape_text(in[0]) +
                         " off the axis");
      }
    }
    return in[1];
  }
  if (name == "embedding") {
    expect_rank(schema, in[0], 2, "weight");
    Shape out = in[1];
    out.push_back(in[0][1]);
    return out;
  }
  if (category == "reduction") {
    if (schema.rule == DtypeRule::kArgReduce) {
      int64_t axis = attrs.get_int("axis");
      return reduce_shape(schema, in[0], {axis}, attrs.get_bool("keepdim"));
    }
    return reduce_shape(schema, in[0], attrs.get_ints("axes"), attrs.get_bool("keepdim"));
  }
  if (name == "matmul") {
    const Shape& a = in[0];
    const Shape& b = in[1];
    if (a.size() < 2 || b.size() < 2) fail(schema, "a and b need at least 2 dimensions");
    int64_t m = a[a.size() - 2], ka = a[a.size() - 1];
    if (attrs.get_bool("transpose_a")) std::swap(m, ka);
    int64_t kb = b[b.size() - 2], n = b[b.size() - 1];
    if (attrs.get_bool("transpose_b")) std::swap(kb, n);
    if (ka != kb) {
      fail(schema, "inner dimensions differ: " + shape_text(a) + " x " + shape_text(b));
    }
    Shape out = broadcast(schema, {Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2)});
    out.push_back(m);
    out.push_back(n);
    return out;
  }
  if (name == "softmax" || name == "log_softmax") {
    normalize_axis(schema, attrs.get_int("axis"), int64_t(in[0].size()));
    return in[0];
  }
  if (name == "layer_norm" || name == "rms_norm") {
    if (in[0].empty()) fail(schema, "x needs at least 1 dimension");
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i] != Shape{in[0].back()}) {
        fail(schema, "weight and bias must have shape [" + std::to_string(in[0].back()) + "]");
      }
    }
    return in[0];
  }
  if (name == "batch_norm") {
    if (in[0].size() < 2) fail(schema, "x must be [N, C, ...]");
    for (size_t i = 1; i < in.size(); ++i) {
      if (in[i] != Shape{in[0][1]}) fail(schema, "mean, var, weight and bias must have shape [C]");
    }
    return in[0];
  }
  if (name == "conv2d") {
    expect_rank(schema, in[0], 4, "x");
    expect_rank(schema, in[1], 4, "weight");
    std::array<int64_t, 2> stride = attrs.get_pair("stride", {1, 1});
    std::array<int64_t, 2> padding = attrs.get_pair("padding", {0, 0});
    std::array<int64_t, 2> dilation = attrs.get_pair("dilation", {1, 1});
    int64_t groups = attrs.get_int("groups");
    const Shape& x = in[0];
    const Shape& w = in[1];
    int64_t grouped = 0;
    if (groups < 1 || x[1] % groups != 0 || w[0] % groups != 0 ||
        !util::checked_mul(w[1], groups, &grouped) || grouped != x[1]) {
      fail(schema, "channels " + std::to_string(x[1]) + " and weight " + shape_text(w) +
                       " do not fit groups " + std::to_string(groups));
    }
    if (in.size() == 3 && in[2] != Shape{w[0]}) fail(schema, "bias must have shape [C_out]");
    for (int i = 0; i < 2; ++i) {
      if (stride[i] < 1 || dilation[i] < 1 || padding[i] < 0) {
        fail(schema, "stride and dilation must be >= 1 and padding >= 0");
      }
    }
    Shape out = {x[0], w[0],
                 pool_or_conv_extent(schema, x[2], w[2], stride[0], padding[0], dilation[0]),
                 pool_or_conv_extent(schema, x[3], w[3], stride[1], padding[1], dilation[1])};
    if (out[2] < 1 || out[3] < 1) fail(schema, "the kernel is larger than the padded input");
    return out;
  }
  if (name == "max_pool2d" || name == "avg_pool2d") {
    expect_rank(schema, in[0], 4, "x");
    std::array<int64_t, 2> kernel = attrs.get_pair("kernel_size", {});
    std::array<int64_t, 2> stride = attrs.get_pair("stride", {kernel[0], kernel[1]});
    std::array<int64_t, 2> padding = attrs.get_pair("padding", {0, 0});
    for (int i = 0; i < 2; ++i) {
      if (kernel[i] < 1 || stride[i] < 1 || padding[i] < 0 || padding[i] > kernel[i] / 2) {
        fail(schema, "kernel_size and stride must be >= 1, 0 <= padding <= kernel_size / 2");
      }
    }
    Shape out = {in[0][0], in[0][1],
                 pool_or_conv_extent(schema, in[0][2], kernel[0], stride[0], padding[0], 1),
                 pool_or_conv_extent(schema, in[0][3], kernel[1], stride[1], padding[1], 1)};
    if (out[2] < 1 || out[3] < 1) fail(schema, "the window is larger than the padded input");
    return out;
  }
  if (name == "scaled_dot_product_attention") {
    const Shape& q = in[0];
    const Shape& k = in[1];
    const Shape& v = in[2];
    if (q.size() < 2 || k.size() != q.size() || v.size() != q.size()) {
      fail(schema, "q, k and v must have one rank >= 2");
    }
    size_t r = q.size();
    if (k[r - 1] != q[r - 1] || v[r - 2] != k[r - 2] ||
        !std::equal(q.begin(), q.end() - 2, k.begin()) ||
        !std::equal(q.begin(), q.end() - 2, v.begin())) {
      fail(schema, "expects q [..., Lq, D], k [..., Lk, D], v [..., Lk, Dv], got " + shape_text(q) +
                       ", " + shape_text(k) + ", " + shape_text(v));
    }
    std::string alignment = attrs.get_string("causal_alignment");
    if (alignment != "bottom_right" && alignment != "top_left") {
      fail(schema, "causal_alignment must be bottom_right or top_left, not " + alignment);
    }
    Shape out = q;
    out[r - 1] = v[r - 1];
    return out;
  }
  if (name == "rotary_embedding") {
    const Shape& x = in[0];
    if (x.size() < 2 || x.back() % 2 != 0) fail(schema, "x must be [..., S, D] with even D");
    Shape table = {x[x.size() - 2], x.back() / 2};
    if (in[1] != table || in[2] != table) {
      fail(schema, "cos and sin must have shape " + shape_text(table));
    }
    return x;
  }
  if (name == "cross_entropy") {
    expect_rank(schema, in[0], 2, "logits");
    expect_rank(schema, in[1], 1, "target");
    if (in[1][0] != in[0][0]) fail(schema, "target must have one entry per row of logits");
    std::string reduction = attrs.get_string("reduction");
    if (reduction == "none") return Shape{in[0][0]};
    if (reduction != "mean" && reduction != "sum") {
      fail(schema, "reduction must be mean, sum or none, not " + reduction);
    }
    return Shape{};
  }
  fail(schema, "no shape rule (an OAR bug)");
}

}  // namespace detail

using namespace detail;  // NOLINT: this file is the schema's home

uint32_t dtype_bit(DLDataType t) {
  if (t.lanes != 1) return 0;
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 16) return kF16;
      if (t.bits == 32) return kF32;
      return t.bits == 64 ? uint32_t(kF64) : 0;
    case kDLBfloat:
      return t.bits == 16 ? uint32_t(kBF16) : 0;
    case kDLInt:
      if (t.bits == 8) return kI8;
      if (t.bits == 16) return kI16;
      if (t.bits == 32) return kI32;
      return t.bits == 64 ? uint32_t(kI64) : 0;
    case kDLUInt:
      return t.bits == 8 ? uint32_t(kU8) : 0;
    case dtype::kDLBoolCode:
      return t.bits == 8 ? uint32_t(kBool) : 0;
    default:
      return 0;
  }
}

std::vector<DLDataType> dtypes_in(uint32_t bits) {
  std::vector<DLDataType> result;
  const DLDataType all[] = {dtype::f16, dtype::bf16,    dtype::f32, dtype::f64, dtype::i32,
                            dtype::i64, dtype::boolean, dtype::i8,  dtype::u8,  dtype::i16};
  for (DLDataType t : all) {
    if (dtype_bit(t) & bits) result.push_back(t);
  }
  return result;
}

const std::vector<OpSchema>& schemas() {
  static const std::vector<OpSchema> table = build_schemas();
  return table;
}

const OpSchema* find_schema(std::string_view name) {
  static const std::unordered_map<std::string_view, const OpSchema*> index = [] {
    std::unordered_map<std::string_view, const OpSchema*> map;
    for (const OpSchema& schema : schemas()) map.emplace(schema.name, &schema);
    return map;
  }();
  auto it = index.find(name);
  return it == index.end() ? nullptr : it->second;
}

Attrs::Attrs(const OpSchema& schema, const oar_attr_t* attrs, size_t count)
    : schema_(schema), attrs_(attrs), count_(count) {}

// "attribute axis must be an int, not a float (1.5)": what a type error says.
static std::string attr_type_error(const oar_attr_t& a, int32_t expected) {
  auto type_name = [](int32_t type) -> std::string {
    switch (type) {
      case OAR_ATTR_TYPE_INT:
        return "an int";
      case OAR_ATTR_TYPE_FLOAT:
        return "a float";
      case OAR_ATTR_TYPE_BOOL:
        return "a bool";
      case OAR_ATTR_TYPE_STRING:
        return "a string";
      case OAR_ATTR_TYPE_INT_ARRAY:
        return "an int array";
      case OAR_ATTR_TYPE_FLOAT_ARRAY:
        return "a float array";
      default:
        return "of unknown type " + std::to_string(type);
    }
  };
  std::string value;
  switch (a.type) {
    case OAR_ATTR_TYPE_INT:
      value = std::to_string(a.value.i);
      break;
    case OAR_ATTR_TYPE_FLOAT: {
      char text[32];
      std::snprintf(text, sizeof text, "%g", a.value.f);
      value = text;
      break;
    }
    case OAR_ATTR_TYPE_BOOL:
      value = a.value.b ? "true" : "false";
      break;
    case OAR_ATTR_TYPE_STRING:
      value = a.value.s == nullptr ? "NULL" : "\"" + std::string(a.value.s).substr(0, 32) + "\"";
      break;
    case OAR_ATTR_TYPE_INT_ARRAY:
    case OAR_ATTR_TYPE_FLOAT_ARRAY: {
      bool ints = a.type == OAR_ATTR_TYPE_INT_ARRAY;
      size_t count = ints ? a.value.ints.count : a.value.floats.count;
      value = "[";
      for (size_t i = 0; i < count && i < 8; ++i) {
        char text[32];
        if (ints)
          std::snprintf(text, sizeof text, "%lld", (long long)a.value.ints.data[i]);
        else
          std::snprintf(text, sizeof text, "%g", a.value.floats.data[i]);
        value += (i == 0 ? "" : ", ") + std::string(text);
      }
      value += count > 8 ? ", ...]" : "]";
      break;
    }
    default:
      break;
  }
  return std::string("attribute ") + a.name + " must be " + type_name(expected) + ", not " +
         type_name(a.type) + (value.empty() ? "" : " (" + value + ")");
}

const AttrSpec& Attrs::spec(const char* name) const {
  for (const AttrSpec& spec : schema_.attrs) {
    if (std::strcmp(spec.name, name) == 0) return spec;
  }
  throw Error(OAR_STATUS_INTERNAL,
              std::string(schema_.name) + " has no attribute " + name + " (an OAR bug)");
}

const oar_attr_t* Attrs::find(const char* name, int32_t type) const {
  for (size_t i = 0; i < count_; ++i) {
    if (std::strcmp(attrs_[i].name, name) == 0) {
      if (attrs_[i].type != type) {
        throw Error(OAR_STATUS_INVALID_ARGUMENT,
                    std::string(schema_.name) + ": " + attr_type_error(attrs_[i], type));
      }
      return &attrs_[i];
    }
  }
  if (spec(name).required) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string(schema_.name) + ": attribute " + name + " is required");
  }
  return nullptr;
}

int64_t Attrs::get_int(const char* name) const {
  const oar_attr_t* a = find(name, OAR_ATTR_TYPE_INT);
  return a != nullptr ? a->value.i : spec(name).default_int;
}
double Attrs::get_float(const char* name) const {
  const oar_attr_t* a = find(name, OAR_ATTR_TYPE_FLOAT);
  return a != nullptr ? a->value.f : spec(name).default_float;
}
bool Attrs::get_bool(const char* name) const {
  const oar_attr_t* a = find(name, OAR_ATTR_TYPE_BOOL);
  return a != nullptr ? a->value.b : spec(name).default_bool;
}
std::string Attrs::get_string(const char* name) const {
  const oar_attr_t* a = find(name, OAR_ATTR_TYPE_STRING);
  return a != nullptr && a->value.s != nullptr ? a->value.s : spec(name).default_string;
}
std::array<int64_t, 2> Attrs::get_pair(const char* name, std::vector<int64_t> fallback) const {
  std::vector<int64_t> v = get_ints(name);
  if (v.empty()) v = std::move(fallback);
  if (v.size() == 1) v.push_back(v[0]);
  if (v.size() != 2) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                std::string(schema_.name) + ": " + name + " must have 1 or 2 values");
  }
  return {v[0], v[1]};
}

std::vector<int64_t> Attrs::get_ints(const char* name) const {
  const oar_attr_t* a = find(name, OAR_ATTR_TYPE_INT_ARRAY);
  if (a == nullptr) return spec(name).default_ints;
  return std::vector<int64_t>(a->value.ints.data, a->value.ints.data + a->value.ints.count);
}

namespace {

void check_arity(const OpSchema& schema, size_t num_inputs) {
  size_t required_inputs = 0;
  bool variadic = false;
  for (const TensorSpec& spec : schema.inputs) {
    required_inputs += spec.optional ? 0 : 1;
    variadic |= spec.variadic;
  }
  if (num_inputs < required_inputs || (!variadic && num_inputs > schema.inputs.size())) {
    fail(schema, "takes " + std::to_string(required_inputs) +
                     (variadic ? " or more"
                      : schema.inputs.size() > required_inputs
                          ? " to " + std::to_string(schema.inputs.size())
                          : std::string()) +
                     " inputs, got " + std::to_string(num_inputs));
  }
}

}  // namespace

std::vector<std::vector<int64_t>> infer_shapes(const OpSchema& schema, const DLTensor* inputs,
                                               size_t num_inputs, const oar_attr_t* attrs,
                                               size_t num_attrs) {
  check_arity(schema, num_inputs);
  if (num_attrs > 0 && attrs == nullptr) fail(schema, "attributes are NULL");
  for (size_t i = 0; i < num_attrs; ++i) {
    if (attrs[i].name == nullptr) fail(schema, "attribute " + std::to_string(i) + " has no name");
    const oar_attr_t& a = attrs[i];
    if ((a.type == kIntArray && a.value.ints.count > 0 && a.value.ints.data == nullptr) ||
        (a.type == OAR_ATTR_TYPE_FLOAT_ARRAY && a.value.floats.count > 0 &&
         a.value.floats.data == nullptr)) {
      fail(schema, std::string("attribute ") + a.name + " has NULL data");
    }
    bool known = false;
    for (const AttrSpec& spec : schema.attrs) {
      if (std::strcmp(spec.name, attrs[i].name) == 0) {
        known = true;
        if (spec.type != attrs[i].type) {
          fail(schema, attr_type_error(attrs[i], spec.type));
        }
      }
    }
    if (!known) {
      std::string valid;
      for (const AttrSpec& spec : schema.attrs)
        valid += (valid.empty() ? "" : ", ") + std::string(spec.name);
      fail(schema, std::string("unknown attribute ") + attrs[i].name +
                       " (valid: " + (valid.empty() ? "none" : valid) + ")");
    }
  }
  // A required attribute is required even where no shape depends on it
  // (fill's value): the kernel may rely on it being there.
  for (const AttrSpec& spec : schema.attrs) {
    if (!spec.required) continue;
    bool given = false;
    for (size_t i = 0; i < num_attrs && !given; ++i) {
      given = std::strcmp(spec.name, attrs[i].name) == 0;
    }
    if (!given) fail(schema, std::string("attribute ") + spec.name + " is required");
  }
  std::vector<Shape> shapes;
  for (size_t i = 0; i < num_inputs; ++i) {
    if (inputs[i].ndim < 0 || inputs[i].ndim > kMaxDims) {
      fail(schema, "tensors may have 0 to 8 dimensions");
    }
    if (inputs[i].ndim > 0 && inputs[i].shape == nullptr) {
      fail(schema, "input " + std::to_string(i) + " has no shape");
    }
    shapes.push_back(shape_of(inputs[i]));
    for (int64_t d : shapes.back()) {
      if (d < 0) fail(schema, "input " + std::to_string(i) + " has a negative dimension");
    }
  }
  Attrs view(schema, attrs, num_attrs);
  if (schema.shape_fn != nullptr) return schema.shape_fn(schema, shapes, view);
  if (schema.inputs.empty()) return {};  // fill: the output's shape is the caller's
  return {infer_one(schema, shapes, view)};
}

void check_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                  const DLTensor* outputs, size_t num_outputs) {
  auto name_of = [](DLDataType t) { return dtype_name(t); };
  auto allowed = [&](DLDataType t) { return (dtype_bit(t) & schema.dtypes) != 0; };
// The message is built only on failure: this runs on every dispatch.
#define need(ok, what)             \
  do {                             \
    if (!(ok)) fail(schema, what); \
  } while (false)
  check_arity(schema, num_inputs);
  if (num_outputs != schema.outputs.size()) {
    fail(schema, "takes " + std::to_string(schema.outputs.size()) + " output(s), got " +
                     std::to_string(num_outputs));
  }
  switch (schema.rule) {
    case DtypeRule::kSame: {
      DLDataType t = num_inputs > 0 ? inputs[0].dtype : outputs[0].dtype;
      need(allowed(t), "does not take " + name_of(t));
      for (size_t i = 0; i < num_inputs; ++i) {
        need(inputs[i].dtype == t, "every tensor must be " + name_of(t));
      }
      for (size_t i = 0; i < num_outputs; ++i) {
        need(outputs[i].dtype == t, "every tensor must be " + name_of(t));
      }
      break;
    }
    case DtypeRule::kCompare:
      need(allowed(inputs[0].dtype), "does not take " + name_of(inputs[0].dtype));
      need(inputs[1].dtype == inputs[0].dtype, "a and b must have one dtype");
      need(outputs[0].dtype == dtype::boolean, "the output must be bool");
      break;
    case DtypeRule::kCast:
      need(allowed(inputs[0].dtype) && allowed(outputs[0].dtype),
           "casts between f16, bf16, f32, f64, i8, u8, i16, i32, i64 and bool only");
      break;
    case DtypeRule::kWhere:
      need(inputs[0].dtype == dtype::boolean, "condition must be bool");
      need(allowed(inputs[1].dtype), "does not take " + name_of(inputs[1].dtype));
      need(inputs[2].dtype == inputs[1].dtype && outputs[0].dtype == inputs[1].dtype,
           "a, b and the output must have one dtype");
      break;
    case DtypeRule::kIndexed: {
      size_t index = size_t(schema.index_input);
      need(inputs[index].dtype == dtype::i32 || inputs[index].dtype == dtype::i64,
           std::string(schema.inputs[index].name) + " must be i32 or i64");
      DLDataType t = inputs[index == 0 ? 1 : 0].dtype;
      need(allowed(t), "does not take " + name_of(t));
      for (size_t i = 0; i < num_inputs; ++i) {
        if (i != index) need(inputs[i].dtype == t, "data tensors must have one dtype");
      }
      need(outputs[0].dtype == t, "the output must be " + name_of(t));
      break;
    }
    case DtypeRule::kArgReduce:
      need(allowed(inputs[0].dtype), "does not take " + name_of(inputs[0].dtype));
      need(outputs[0].dtype == dtype::i64, "the output must be i64");
      break;
    case DtypeRule::kCustom:
      schema.check_dtypes_fn(schema, inputs, num_inputs, outputs, num_outputs);
      break;
  }
#undef need
}

std::vector<DLDataType> output_dtypes(const OpSchema& schema, DLDataType input_dtype) {
  switch (schema.rule) {
    case DtypeRule::kCompare:
      return {dtype::boolean};
    case DtypeRule::kArgReduce:
      return {dtype::i64};
    case DtypeRule::kCustom:
      return schema.output_dtypes_fn(schema, input_dtype);
    default:
      return std::vector<DLDataType>(schema.outputs.size(), input_dtype);
  }
}

}  // namespace oar::ops
