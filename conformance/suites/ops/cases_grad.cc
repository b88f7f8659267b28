// The operator suite's cases for the operators of core/ops/schema_grad.cc.
// gradient_checks.cc adds the finite-difference checks of the same operators.
#include "conformance/suites/ops/op_case_parts.h"

namespace oar::conformance::cases {
namespace {

bool is_pointwise_grad(const std::string& op) {
  return in_set(op, {"relu_grad", "sigmoid_grad", "tanh_grad", "silu_grad", "gelu_grad"});
}

// Where the second input (x or y) of a pointwise gradient lies.
Domain second_domain(const std::string& op) {
  if (op == "relu_grad") return integers(-3, 3);  // x = 0 (the kink) and x < 0 often
  if (op == "sigmoid_grad") return uniform(0, 1);
  if (op == "tanh_grad") return uniform(-1, 1);
  return uniform(-6, 6);
}

std::vector<OpCase> pointwise_cases(const std::string& op, DLDataType dt) {
  const Domain dy = uniform(-4, 4), second = second_domain(op);
  std::vector<OpCase> cases;
  struct Shaped {
    const char* name;
    Shape shape;
    bool transposed;
  };
  const Shaped shapes[] = {
      {"scalar", {}, false},
      {"empty", {0, 5}, false},
      {"odd_7", {7}, false},
      {"prime_13x31", {13, 31}, false},
      {"rank4_2x3x5x7", {2, 3, 5, 7}, false},
      {"noncontiguous", {13, 31}, true},
      {"large_1M", kLarge1d, false},
  };
  for (const Shaped& s : shapes) {
    // One large case per operator (f32) keeps the suite's time: pointwise
    // kernels have no per-dtype accumulation for a size to expose.
    if (s.shape == kLarge1d && dt != dtype::f32) continue;
    cases.push_back(
        make_case(s.name, {spec(s.shape, dt, dy, s.transposed), spec(s.shape, dt, second)}));
  }
  // IEEE special values of the second input, one per element, with dy = 1.5.
  std::vector<double> specials = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 3.0, -3.0};
  if (in_set(op, {"sigmoid_grad", "tanh_grad"})) specials = {kNaN, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5};
  const Shape n = {int64_t(specials.size())};
  const std::vector<double> ones(specials.size(), 1.5);
  std::vector<AttrValue> forms[2] = {{}, {attr("approximate", "tanh")}};
  for (int form = 0; form < (op == "gelu_grad" ? 2 : 1); ++form) {
    const std::string prefix = form == 0 ? "" : "tanh_form_";
    cases.push_back(make_case(prefix + "special_values_ieee",
                              {explicit_values(n, dt, ones), explicit_values(n, dt, specials)},
                              forms[form]));
  }
  // A NaN or infinite dy: propagated through the product, masked by relu_grad
  // where x <= 0 (a mask, not a multiplication by 0).
  cases.push_back(
      make_case("special_dy", {explicit_values({6}, dt, {kNaN, kInf, -kInf, kNaN, kInf, -0.0}),
                               explicit_values({6}, dt, {-1.0, -2.0, 0.0, 0.5, 0.25, 2.0})}));
  if (op == "tanh_grad") {
    // 1 - y^2 near |y| = 1 loses its precision in f32; (1 - y)(1 + y) keeps it.
    cases.push_back(
        make_case("y_near_one", {spec({13, 31}, dt, dy), spec({13, 31}, dt, uniform(0.999, 1))}));
    cases.push_back(make_case("y_near_minus_one",
                              {spec({13, 31}, dt, dy), spec({13, 31}, dt, uniform(-1, -0.999))}));
  }
  if (in_set(op, {"silu_grad", "gelu_grad"})) {
    // Far from zero: exp overflows in 1 / (1 + e^-x) forms that divide inf by inf.
    std::vector<double> v;
    for (double m : {20.0, 50.0, 100.0, 500.0, 1000.0, 30000.0}) v.push_back(m), v.push_back(-m);
    const Shape shape = {int64_t(v.size())};
    const std::vector<double> dys(v.size(), 0.75);
    for (int form = 0; form < (op == "gelu_grad" ? 2 : 1); ++form) {
      cases.push_back(make_case(form == 0 ? "large_magnitudes" : "tanh_form_large_magnitudes",
                                {explicit_values(shape, dt, dys), explicit_values(shape, dt, v)},
                                forms[form]));
    }
  }
  if (op == "gelu_grad") {
    cases.push_back(make_case("erf_form_explicit",
                              {spec({13, 31}, dt, dy), spec({13, 31}, dt, second)},
                              {attr("approximate", "none")}));
    cases.push_back(make_case("tanh_form_prime_13x31",
                              {spec({13, 31}, dt, dy), spec({13, 31}, dt, second)},
                              {attr("approximate", "tanh")}));
    cases.push_back(make_case("tanh_form_noncontiguous",
                              {spec({13, 31}, dt, dy, true), spec({13, 31}, dt, second, true)},
                              {attr("approximate", "tanh")}));
    // Near x = -2.5 the two forms' derivatives differ by well over every
    // dtype's tolerance: a kernel that ignores |approximate| fails in bf16 too.
    for (int form = 0; form < 2; ++form) {
      cases.push_back(
          make_case(form == 0 ? "erf_form_tail_separates_forms" : "tanh_form_tail_separates_forms",
                    {spec({13, 31}, dt, uniform(1, 2)), spec({13, 31}, dt, uniform(-3.3, -2.7))},
                    {attr("approximate", form == 0 ? "none" : "tanh")}));
    }
  }
  return cases;
}

std::vector<OpCase> row_cases(const std::string& op, DLDataType dt) {
  const Domain dy = uniform(-4, 4);
  // y as the forward produces it: probabilities (softmax), log-probabilities.
  const Domain y = op == "softmax_grad" ? uniform(0, 1) : uniform(-8, 0);
  auto c = [&](const char* name, Shape shape, int64_t axis, bool transposed = false) {
    return make_case(name, {spec(shape, dt, dy, transposed), spec(shape, dt, y, transposed)},
                     {attr("axis", axis)});
  };
  std::vector<OpCase> cases = {
      c("last_axis_13x31", {13, 31}, -1),
      c("axis0_13x31", {13, 31}, 0),
      c("middle_axis_4x7x9", {4, 7, 9}, 1),
      c("scalar", {}, 0),
      c("empty", {0, 5}, -1),
      c("empty_axis_5x0", {5, 0}, -1),
      c("axis_of_one", {7, 1}, -1),
      c("noncontiguous", {13, 31}, -1, true),
      // A row sum of 2048 terms in an f16 accumulator loses most of them.
      c("long_rows_16x2048", {16, 2048}, -1),
      // A NaN in dy makes its whole row NaN (through the row's sum).
      make_case("nan_in_dy_poisons_row",
                {explicit_values({2, 3}, dt, {1.0, kNaN, 2.0, 1.0, 2.0, 3.0}),
                 explicit_values({2, 3}, dt,
                                 op == "softmax_grad"
                                     ? std::vector<double>{0.25, 0.25, 0.5, 0.5, 0.25, 0.25}
                                     : std::vector<double>{-1, -2, -3, -1, -2, -3})},
                {attr("axis", int64_t(-1))}),
  };
  if (dt == dtype::f32) cases.push_back(c("large_1024x1024", kLargeRows, -1));
  return cases;
}

// embedding_grad: dy is index.shape + [D]; indices in [0, V) repeat.
std::vector<OpCase> embedding_cases(DLDataType dt) {
  const Domain g = uniform(-4, 4);
  auto c = [&](const char* name, Shape index, DLDataType index_dtype, int64_t V, int64_t D,
               Domain indices, bool transposed = false) {
    Shape dy = index;
    dy.push_back(D);
    return make_case(name, {spec(dy, dt, g, transposed), spec(index, index_dtype, indices)},
                     {attr("num_embeddings", V)});
  };
  std::vector<OpCase> cases = {
      c("repeated_indices_i64", {6}, dtype::i64, 4, 5, integers(0, 3)),
      c("repeated_indices_i32", {6}, dtype::i32, 4, 5, integers(0, 3)),
      c("index_2d_8x9_v13_d31", {8, 9}, dtype::i64, 13, 31, integers(0, 12)),
      c("scalar_index", {}, dtype::i32, 3, 7, integers(0, 2)),
      // Rows no index names are zeros (not left as they were).
      c("unused_rows_are_zero", {5}, dtype::i64, 20, 3, integers(0, 4)),
      c("empty_index", {0}, dtype::i64, 3, 5, integers(0, 2)),
      c("no_embeddings_no_index", {0}, dtype::i32, 0, 4, integers(0, 0)),
      c("zero_width_d0", {4}, dtype::i64, 3, 0, integers(0, 2)),
      c("noncontiguous_dy", {13}, dtype::i64, 5, 31, integers(0, 4), true),
      // Thousands of repeats of a few rows: an f16/bf16 accumulator loses them.
      c("many_repeats_4096_into_3", {4096}, dtype::i64, 3, 7, integers(0, 2)),
  };
  if (dt == dtype::f32) {
    cases.push_back(c("large_2048_into_512x64", {2048}, dtype::i32, 512, 64, integers(0, 511)));
  }
  return cases;
}

std::vector<OpCase> cross_entropy_cases(DLDataType dt) {
  auto c = [&](const std::string& name, int64_t N, int64_t C, const char* reduction,
               DLDataType target_dtype, Domain logits) {
    const Shape dloss = std::string(reduction) == "none" ? Shape{N} : Shape{};
    return make_case(name,
                     {spec(dloss, dt, uniform(0.5, 2)), spec({N, C}, dt, logits),
                      spec({N}, target_dtype, integers(0, C == 0 ? 0 : C - 1))},
                     {attr("reduction", reduction)});
  };
  const Domain d = uniform(-5, 5);
  std::vector<OpCase> cases = {
      c("mean_13x31", 13, 31, "mean", dtype::i64, d),
      c("sum_13x31_i32", 13, 31, "sum", dtype::i32, d),
      c("none_13x31", 13, 31, "none", dtype::i64, d),
      c("one_class_gradient_zero", 7, 1, "mean", dtype::i64, d),
      c("no_rows_mean", 0, 5, "mean", dtype::i64, d),
      c("no_rows_none", 0, 5, "none", dtype::i32, d),
      // Without the max shift e^1000 is inf: NaN rows.
      c("logits_near_plus_1000", 13, 31, "none", dtype::i64, uniform(995, 1005)),
      c("logits_spread_pm1000", 13, 31, "sum", dtype::i64, uniform(-1000, 1000)),
      c("long_rows_16x2048", 16, 2048, "mean", dtype::i64, d),
      make_case("nan_logit_poisons_its_row",
                {explicit_values({2}, dt, {1.0, 2.0}),
                 explicit_values({2, 3}, dt, {1.0, kNaN, 2.0, 1.0, 2.0, 3.0}),
                 explicit_values({2}, dtype::i64, {0, 2})},
                {attr("reduction", "none")}),
  };
  if (dt == dtype::f32) cases.push_back(c("large_512x1000", 512, 1000, "mean", dtype::i32, d));
  return cases;
}

std::vector<OpCase> rotary_cases(DLDataType dt) {
  const Domain g = uniform(-4, 4), angle = uniform(-1, 1);
  auto c = [&](const char* name, Shape dy, bool interleaved, bool transposed = false) {
    const Shape table = {dy[dy.size() - 2], dy.back() / 2};
    return make_case(name,
                     {spec(dy, dt, g, transposed), spec(table, dt, angle), spec(table, dt, angle)},
                     {attr("interleaved", interleaved)});
  };
  std::vector<OpCase> cases = {
      c("half_2x3x5x8", {2, 3, 5, 8}, false),
      c("interleaved_2x3x5x8", {2, 3, 5, 8}, true),
      c("rank2_7x6", {7, 6}, false),
      c("one_position_1x2", {1, 2}, true),
      c("empty_batch_0x3x4", {0, 3, 4}, false),
      c("noncontiguous_13x8", {13, 8}, false, true),
  };
  if (dt == dtype::f32) cases.push_back(c("large_16x256x128", {16, 256, 128}, false));
  return cases;
}

}  // namespace

std::optional<std::vector<OpCase>> grad_cases(const ops::OpSchema& schema, DLDataType dtype,
                                              uint32_t claimed) {
  (void)claimed;
  const std::string op = schema.name;
  if (is_pointwise_grad(op)) return pointwise_cases(op, dtype);
  if (in_set(op, {"softmax_grad", "log_softmax_grad"})) return row_cases(op, dtype);
  if (op == "embedding_grad") return embedding_cases(dtype);
  if (op == "cross_entropy_grad") return cross_entropy_cases(dtype);
  if (op == "rotary_embedding_grad") return rotary_cases(dtype);
  return std::nullopt;
}

std::optional<Family> grad_family(const ops::OpSchema& schema) {
  const std::string op = schema.name;
  if (op == "relu_grad") return Family::kExact;
  if (is_pointwise_grad(op)) return Family::kTranscendental;
  if (in_set(op, {"softmax_grad", "log_softmax_grad"})) return Family::kNormalized;
  // embedding_grad's sums are of one row's repeats (no magnitude: its index
  // input is no term of the sum).
  if (in_set(op, {"embedding_grad", "cross_entropy_grad", "rotary_embedding_grad"})) {
    return Family::kNormalized;
  }
  return std::nullopt;
}

}  // namespace oar::conformance::cases
