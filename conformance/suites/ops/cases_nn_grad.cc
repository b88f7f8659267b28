// The operator suite's cases for the operators of core/ops/schema_nn_grad.cc.
#include "conformance/suites/ops/op_case_parts.h"

namespace oar::conformance::cases {
namespace {

// layer_norm_grad / rms_norm_grad(dy, x, weight).
std::vector<OpCase> norm_grad_cases(const std::string& op, DLDataType dt) {
  auto c = [&](const char* name, Shape x, bool transposed = false,
               std::vector<AttrValue> attrs = {}, Domain domain = uniform(-3, 3)) {
    return make_case(name,
                     {spec(x, dt, uniform(-1, 1), transposed), spec(x, dt, domain),
                      spec({x.back()}, dt, uniform(0.5, 1.5))},
                     std::move(attrs));
  };
  // Rows whose variance (rms: mean square) is of the order of eps: the
  // recomputed rstd depends on eps far beyond any dtype's tolerance.
  const Domain tiny = op == "layer_norm_grad" ? uniform(-0.004, 0.004) : uniform(-0.002, 0.002);
  return {
      c("rows_13x31", {13, 31}),
      c("rank3_2x7x64", {2, 7, 64}),
      c("eps_1e-2", {13, 31}, false, {attr("eps", 1e-2)}),
      // D = 1: layer_norm's dx is 0 (xhat is 0), rms_norm's is not.
      c("width_one", {7, 1}),
      // No rows: dweight (and dbias) are sums over nothing, zeros.
      c("empty_rows_dweight_zero", {0, 31}),
      c("empty_row_width", {5, 0}),
      c("noncontiguous_dy", {13, 31}, true),
      c("large_1024x1024", kLargeRows),
      c("default_eps_matters_tiny_variance", {13, 31}, false, {}, tiny),
      c("eps_1_dominates", {13, 31}, false, {attr("eps", 1.0)}, uniform(-1, 1)),
      c("long_rows_16x2048", {16, 2048}),
      // Columns summed over 4096 rows: an f16 or bf16 accumulator loses terms.
      c("tall_4096x8_column_sums", {4096, 8}),
  };
}

// max_pool2d_grad / avg_pool2d_grad(dy, x): dy has the forward output's shape.
std::vector<OpCase> pool_grad_cases(const std::string& op, DLDataType dt) {
  struct Pool {
    const char* name;
    Shape x, y;
    Shape kernel, stride, padding;
    bool transposed;
  };
  const Pool table[] = {
      {"kernel2_default_stride", {2, 3, 8, 8}, {2, 3, 4, 4}, {2, 2}, {}, {0, 0}, false},
      // Overlapping windows: a position collects dy from several windows.
      {"overlap_kernel3_stride1", {1, 2, 7, 7}, {1, 2, 5, 5}, {3, 3}, {1, 1}, {0, 0}, false},
      {"kernel3_stride2_padding1", {1, 2, 9, 9}, {1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1}, false},
      {"asymmetric_2x3_stride1", {1, 2, 7, 8}, {1, 2, 6, 8}, {2, 3}, {1, 1}, {0, 1}, false},
      // The last row and column of x lie in no window: dx is 0 there.
      {"odd_input_7x7_kernel2", {1, 3, 7, 7}, {1, 3, 3, 3}, {2, 2}, {2, 2}, {0, 0}, false},
      {"empty_batch", {0, 3, 8, 8}, {0, 3, 4, 4}, {2, 2}, {}, {0, 0}, false},
      {"noncontiguous_dy", {2, 3, 8, 8}, {2, 3, 4, 4}, {2, 2}, {}, {0, 0}, true},
      {"large_2x16x64x64", {2, 16, 64, 64}, {2, 16, 32, 32}, {3, 3}, {2, 2}, {1, 1}, false},
  };
  std::vector<OpCase> cases;
  auto pool_attrs = [](const Pool& p) {
    std::vector<AttrValue> attrs = {attr("kernel_size", p.kernel), attr("padding", p.padding)};
    if (!p.stride.empty()) attrs.push_back(attr("stride", p.stride));
    return attrs;
  };
  for (const Pool& p : table) {
    cases.push_back(make_case(
        p.name, {spec(p.y, dt, uniform(-2, 2), p.transposed), spec(p.x, dt, uniform(-4, 4))},
        pool_attrs(p)));
  }
  if (op == "max_pool2d_grad") {
    // Ties: every window of a constant plane, and integers in [-2, 2] (many
    // equal maxima per window), hand dy to the first maximum in row-major
    // order only.
    const Pool overlap = table[1];
    cases.push_back(make_case("ties_constant_plane_first_maximum",
                              {spec(overlap.y, dt, uniform(-2, 2)),
                               explicit_values(overlap.x, dt, std::vector<double>(98, 1.5))},
                              pool_attrs(overlap)));
    cases.push_back(
        make_case("ties_small_integers_first_maximum",
                  {spec(table[2].y, dt, uniform(-2, 2)), spec(table[2].x, dt, integers(-2, 2))},
                  pool_attrs(table[2])));
    // A NaN is the maximum of every window holding it (the first NaN wins);
    // -inf still wins over padding.
    std::vector<double> x(49, -kInf);
    x[8] = kNaN;
    x[10] = kNaN;
    x[24] = 3;
    cases.push_back(
        make_case("nan_and_minus_inf_windows",
                  {spec({1, 1, 5, 5}, dt, uniform(-2, 2)), explicit_values({1, 1, 7, 7}, dt, x)},
                  {attr("kernel_size", Shape{3, 3}), attr("stride", Shape{1, 1})}));
  } else {
    cases.push_back(
        make_case("exclude_padding",
                  {spec({1, 2, 5, 5}, dt, uniform(-2, 2)), spec({1, 2, 9, 9}, dt, uniform(-4, 4))},
                  {attr("kernel_size", Shape{3, 3}), attr("stride", Shape{2, 2}),
                   attr("padding", Shape{1, 1}), attr("count_include_pad", false)}));
  }
  return cases;
}

// conv2d_grad_input(dy, weight) and conv2d_grad_weight(dy, x): the geometries
// of conv2d's own cases, dy of the forward output's shape.
std::vector<OpCase> conv_grad_cases(const std::string& op, DLDataType dt) {
  const bool input = op == "conv2d_grad_input";
  struct Conv {
    const char* name;
    Shape x, w;
    Shape stride, padding, dilation;
    int64_t groups;
    bool transposed;  // dy non-contiguous
    Domain domain;
  };
  const Domain d = uniform(-1, 1);
  const Conv table[] = {
      {"basic_3x3", {1, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, false, d},
      {"batch2", {2, 3, 8, 8}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, false, d},
      // Stride 2 over an odd size: the last row and column of x meet no tap
      // of some kernel rows (grad_input: zeros there).
      {"stride2_padding1", {1, 3, 9, 9}, {5, 3, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false, d},
      {"stride2_drops_last_row", {1, 2, 8, 8}, {3, 2, 3, 3}, {2, 2}, {0, 0}, {1, 1}, 1, false, d},
      {"dilation2", {1, 2, 11, 11}, {3, 2, 3, 3}, {1, 1}, {0, 0}, {2, 2}, 1, false, d},
      {"groups2", {2, 4, 8, 8}, {6, 2, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, false, d},
      {"depthwise", {1, 4, 7, 7}, {4, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 4, false, d},
      {"asymmetric_1x3_stride2x1", {1, 3, 7, 9}, {5, 3, 1, 3}, {2, 1}, {0, 1}, {1, 1}, 1, false, d},
      {"pointwise_1x1", {2, 8, 5, 5}, {4, 8, 1, 1}, {1, 1}, {0, 0}, {1, 1}, 1, false, d},
      {"empty_batch", {0, 3, 5, 5}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1, false, d},
      {"noncontiguous_dy", {1, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 1, true, d},
      {"large_2x16x32x32_to_32",
       {2, 16, 32, 32},
       {32, 16, 3, 3},
       {1, 1},
       {1, 1},
       {1, 1},
       1,
       false,
       d},
      // Long sums of positive products: an f16 or bf16 accumulator fails.
      // grad_input sums over 512 output channels x 9 taps, grad_weight over
      // 4 images x 46 x 46 positions.
      input ? Conv{"long_sums_positive_4608",
                   {1, 4, 8, 8},
                   {512, 4, 3, 3},
                   {1, 1},
                   {0, 0},
                   {1, 1},
                   1,
                   false,
                   uniform(0, 1)}
            : Conv{"long_sums_positive_8464",
                   {4, 1, 48, 48},
                   {8, 1, 3, 3},
                   {1, 1},
                   {0, 0},
                   {1, 1},
                   1,
                   false,
                   uniform(0, 1)},
  };
  std::vector<OpCase> cases;
  for (const Conv& v : table) {
    Shape y = {v.x[0], v.w[0], 0, 0};
    for (int i = 0; i < 2; ++i) {
      y[size_t(2 + i)] = (v.x[size_t(2 + i)] + 2 * v.padding[size_t(i)] -
                          v.dilation[size_t(i)] * (v.w[size_t(2 + i)] - 1) - 1) /
                             v.stride[size_t(i)] +
                         1;
    }
    std::vector<AttrValue> attrs = {attr("stride", v.stride), attr("padding", v.padding),
                                    attr("dilation", v.dilation), attr("groups", v.groups)};
    if (input) {
      attrs.push_back(attr("input_size", Shape{v.x[2], v.x[3]}));
    } else {
      attrs.push_back(attr("kernel_size", Shape{v.w[2], v.w[3]}));
    }
    cases.push_back(make_case(
        v.name, {spec(y, dt, v.domain, v.transposed), spec(input ? v.w : v.x, dt, v.domain)},
        attrs));
  }
  return cases;
}

// scaled_dot_product_attention_grad(dy, q, k, v): attention's own shapes and
// masks, dy of the output's shape.
std::vector<OpCase> attention_grad_cases(DLDataType dt) {
  const Domain d = uniform(-1, 1);
  auto c = [&](const char* name, Shape q, Shape k, Shape v, bool causal,
               const char* alignment = "bottom_right", double scale = 0, bool dy_transposed = false,
               Domain qk = uniform(-1, 1)) {
    Shape y = q;
    y.back() = v.back();
    return make_case(
        name, {spec(y, dt, d, dy_transposed), spec(q, dt, qk), spec(k, dt, qk), spec(v, dt, d)},
        {attr("causal", causal), attr("scale", scale), attr("causal_alignment", alignment)});
  };
  return {
      c("basic_lq7_lk11", {2, 3, 7, 16}, {2, 3, 11, 16}, {2, 3, 11, 8}, false),
      c("causal_square", {2, 3, 9, 16}, {2, 3, 9, 16}, {2, 3, 9, 16}, true),
      c("explicit_scale_0.5", {1, 2, 5, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}, false, "bottom_right", 0.5),
      c("rank2", {5, 8}, {6, 8}, {6, 4}, false),
      c("rank3_causal", {4, 13, 8}, {4, 13, 8}, {4, 13, 8}, true),
      c("empty_batch", {0, 2, 5, 8}, {0, 2, 5, 8}, {0, 2, 5, 8}, false),
      c("noncontiguous_dy", {2, 3, 7, 16}, {2, 3, 11, 16}, {2, 3, 11, 8}, false, "bottom_right", 0,
        true),
      c("large_causal_2x4x64x32", {2, 4, 64, 32}, {2, 4, 64, 32}, {2, 4, 64, 32}, true),
      // Bottom-right: with more queries than keys the first queries see no
      // key and send no gradient; top-left: query i sees keys 0..i.
      c("causal_fewer_queries_lq5_lk9", {2, 3, 5, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}, true),
      c("causal_more_queries_lq9_lk5", {2, 3, 9, 16}, {2, 3, 5, 16}, {2, 3, 5, 8}, true),
      c("causal_top_left_fewer_queries_lq5_lk9", {2, 3, 5, 16}, {2, 3, 9, 16}, {2, 3, 9, 8}, true,
        "top_left"),
      c("causal_top_left_more_queries_lq9_lk5", {2, 3, 9, 16}, {2, 3, 5, 16}, {2, 3, 5, 8}, true,
        "top_left"),
      // Scores sharp enough that the scale's effect exceeds every tolerance.
      c("explicit_scale_4_sharp", {1, 2, 5, 8}, {1, 2, 6, 8}, {1, 2, 6, 8}, false, "bottom_right",
        4.0, false, uniform(-2, 2)),
  };
}

}  // namespace

std::optional<std::vector<OpCase>> nn_grad_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                 uint32_t claimed) {
  (void)claimed;
  const std::string op = schema.name;
  if (op == "layer_norm_grad" || op == "rms_norm_grad") return norm_grad_cases(op, dtype);
  if (op == "max_pool2d_grad" || op == "avg_pool2d_grad") return pool_grad_cases(op, dtype);
  if (op == "conv2d_grad_input" || op == "conv2d_grad_weight") return conv_grad_cases(op, dtype);
  if (op == "scaled_dot_product_attention_grad") return attention_grad_cases(dtype);
  return std::nullopt;
}

std::optional<Family> nn_grad_family(const ops::OpSchema& schema) {
  // Several outputs (the norms) cannot use the accumulate family's magnitude,
  // which the suite computes for output 0 only; the pools' sums have a few
  // terms each.
  if (in_set(schema.name, {"layer_norm_grad", "rms_norm_grad", "max_pool2d_grad", "avg_pool2d_grad",
                           "scaled_dot_product_attention_grad"})) {
    return Family::kNormalized;
  }
  // Sums of products, like conv2d: compared with their magnitude.
  if (in_set(schema.name, {"conv2d_grad_input", "conv2d_grad_weight"})) return Family::kAccumulate;
  return std::nullopt;
}

}  // namespace oar::conformance::cases
