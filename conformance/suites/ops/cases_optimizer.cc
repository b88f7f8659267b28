// The operator suite's cases for the operators of core/ops/schema_optimizer.cc.
// Each case is chosen so that one realistic mistake moves the results by far
// more than the tolerance: dampening applied on the first step, bias
// correction left out or off by one step, AdamW's decay taken as L2 (or the
// other way round), eps inside the square root, state kept in the
// parameter's 16-bit dtype. The suite's runner gives every output its own
// buffer; the model suite's optimizer tests bind the outputs to the inputs
// (the in-place update).
#include "conformance/suites/ops/op_case_parts.h"

namespace oar::conformance::cases {
namespace {

DLDataType state_of(DLDataType p) { return p == dtype::f64 ? dtype::f64 : dtype::f32; }

// The elementwise steps' "large" case: 2^18 elements, past every plugin's
// threading threshold and work-group count, at a quarter of kLarge1d's cost
// (each step has 4 to 7 tensors; the time goes to the host's reference).
const Shape kLargeStep = {int64_t(1) << 18};

// param, grad, then |states| state tensors of |shape|; |transposed|: every
// input a non-contiguous view.
std::vector<InputSpec> step_inputs(Shape shape, DLDataType dt, int states, bool transposed,
                                   Domain grad = uniform(-1, 1)) {
  std::vector<InputSpec> in = {spec(shape, dt, uniform(-2, 2), transposed),
                               spec(shape, dt, grad, transposed)};
  const DLDataType s = state_of(dt);
  if (states >= 1) in.push_back(spec(shape, s, uniform(-1, 1), transposed));
  // exp_avg_sq is a running mean of squares: never negative.
  if (states >= 2) in.push_back(spec(shape, s, uniform(0.01, 1), transposed));
  return in;
}

std::vector<OpCase> sgd_cases(DLDataType dt) {
  auto c = [&](const char* name, std::vector<AttrValue> attrs, Shape shape = {13, 31},
               bool transposed = false) {
    attrs.push_back(attr("lr", 0.1));
    return make_case(name, step_inputs(shape, dt, 1, transposed), std::move(attrs));
  };
  const AttrValue later = attr("step", int64_t(5));
  return {
      c("plain_no_momentum", {later}),
      c("scalar", {later, attr("momentum", 0.9)}, {}),
      c("empty", {later, attr("momentum", 0.9)}, {0, 31}),
      c("odd_1x1x97", {later, attr("momentum", 0.9)}, {1, 1, 97}),
      c("noncontiguous", {later, attr("momentum", 0.9)}, {13, 31}, true),
      c("large", {later, attr("momentum", 0.9)}, kLargeStep),
      // The first step copies the gradient into the buffer, undamped.
      c("first_step_buffer_is_grad_undamped",
        {attr("step", int64_t(1)), attr("momentum", 0.9), attr("dampening", 0.5)}),
      c("momentum_dampening", {later, attr("momentum", 0.9), attr("dampening", 0.3)}),
      c("nesterov", {later, attr("momentum", 0.8), attr("nesterov", true)}),
      c("nesterov_first_step",
        {attr("step", int64_t(1)), attr("momentum", 0.8), attr("nesterov", true)}),
      c("weight_decay_momentum", {later, attr("momentum", 0.9), attr("weight_decay", 0.25)}),
      c("weight_decay_no_momentum", {later, attr("weight_decay", 0.25)}),
      make_case("nan_inf_grad_propagate",
                {explicit_values({6}, dt, {1, -1, 0.5, 2, -2, 0}),
                 explicit_values({6}, dt, {kNaN, kInf, -kInf, 0.5, 0, kNaN}),
                 explicit_values({6}, state_of(dt), {0.5, 0.5, 0.5, kNaN, 1, 0})},
                {attr("lr", 0.1), later, attr("momentum", 0.9)}),
  };
}

std::vector<OpCase> adam_cases(DLDataType dt, bool decoupled) {
  auto c = [&](const char* name, std::vector<AttrValue> attrs, Shape shape = {13, 31},
               bool transposed = false, Domain grad = uniform(-1, 1)) {
    attrs.push_back(attr("lr", 0.05));
    return make_case(name, step_inputs(shape, dt, 2, transposed, grad), std::move(attrs));
  };
  const AttrValue later = attr("step", int64_t(3));
  return {
      // Bias correction makes the first step lr * sign(grad) (for |grad| >> eps).
      c("first_step_bias_corrected", {attr("step", int64_t(1))}),
      c("step_3", {later}),
      c("scalar", {later}, {}),
      c("empty", {later}, {0, 31}),
      c("odd_1x1x97", {later}, {1, 1, 97}),
      c("noncontiguous", {later}, {13, 31}, true),
      c("large", {later}, kLargeStep),
      c("betas_0.5_0.9", {later, attr("beta1", 0.5), attr("beta2", 0.9)}),
      c("beta1_zero", {later, attr("beta1", 0.0)}),
      c("step_10000_correction_near_1", {attr("step", int64_t(10000))}),
      // eps added outside the square root: eps 0.05 against sqrt(v) ~ 0.1-1.
      c("eps_0.05", {later, attr("eps", 0.05)}),
      // Small gradients: eps (1e-3) is of the order of sqrt(v), so where it
      // goes matters.
      c("small_grads_eps_matters", {later, attr("eps", 1e-3)}, {13, 31}, false,
        uniform(-1e-3, 1e-3)),
      c("weight_decay_0.2", {later, attr("weight_decay", 0.2)}),
      c(decoupled ? "no_weight_decay" : "weight_decay_0", {later, attr("weight_decay", 0.0)}),
      make_case("nan_inf_grad_propagate",
                {explicit_values({6}, dt, {1, -1, 0.5, 2, -2, 0}),
                 explicit_values({6}, dt, {kNaN, kInf, -kInf, 0.5, 0, 1}),
                 explicit_values({6}, state_of(dt), {0.5, 0.5, 0.5, kNaN, 0, 0}),
                 explicit_values({6}, state_of(dt), {0.5, 0.5, 0.5, 0.5, 0, kInf})},
                {attr("lr", 0.05), later}),
  };
}

std::vector<OpCase> grad_norm_cases(DLDataType dt) {
  auto c = [&](const char* name, std::vector<Shape> shapes, double norm_type = 2,
               bool transposed = false, Domain domain = uniform(-1, 1)) {
    std::vector<InputSpec> in;
    for (Shape& shape : shapes) in.push_back(spec(std::move(shape), dt, domain, transposed));
    return make_case(name, std::move(in), {attr("norm_type", norm_type)});
  };
  std::vector<Shape> many(32, Shape{5, 3});
  std::vector<OpCase> cases = {
      c("one_13x31", {{13, 31}}),
      c("three_tensors_of_three_ranks", {{13, 31}, {7}, {}}),
      c("l1", {{13, 31}, {7}}, 1),
      c("inf", {{13, 31}, {7}}, kInf),
      c("with_an_empty_tensor", {{0, 5}, {7}, {3, 4}}),
      c("all_empty_is_zero", {{0}, {0, 3}}),
      c("scalars", {{}, {}}),
      c("noncontiguous", {{13, 31}, {9, 4}}, 2, true),
      // 2^20 + 3 elements: more partial sums than one pass of a chunked
      // reduction (1024 chunks of 1024, plus one) combines.
      c("large_and_small", {kLarge1d, {3}}),
      c("large_inf", {kLarge1d}, kInf),
      c("32_tensors", many),
      // 1000 squares of ~200 pass f16's largest value (65504) early.
      c("squares_beyond_f16_range", {{1000}}, 2, false, away_from_zero(150, 250)),
  };
  for (double norm_type : {1.0, 2.0, kInf}) {
    const std::string suffix = norm_type == 1 ? "l1" : norm_type == 2 ? "l2" : "inf";
    cases.push_back(
        make_case("nan_propagates_" + suffix,
                  {explicit_values({3}, dt, {1, kNaN, 2}), explicit_values({2}, dt, {kInf, 1})},
                  {attr("norm_type", norm_type)}));
    cases.push_back(
        make_case("inf_gives_inf_" + suffix,
                  {explicit_values({3}, dt, {1, -kInf, 2}), explicit_values({2}, dt, {3, 1})},
                  {attr("norm_type", norm_type)}));
  }
  return cases;
}

std::vector<OpCase> clip_cases(DLDataType dt) {
  const DLDataType s = state_of(dt);
  auto c = [&](const char* name, double total, std::vector<AttrValue> attrs, Shape shape = {13, 31},
               bool transposed = false) {
    return make_case(name,
                     {spec(shape, dt, uniform(-2, 2), transposed), explicit_values({}, s, {total})},
                     std::move(attrs));
  };
  const AttrValue one = attr("max_norm", 1.0);
  return {
      c("clipped_by_10", 10, {one}),
      c("below_max_norm_unchanged", 0.5, {one}),
      c("at_max_norm", 1, {one}),
      c("eps_matters_tiny_norms", 1e-6, {attr("max_norm", 1e-6)}),
      c("eps_0.5", 1, {one, attr("eps", 0.5)}),
      c("zero_norm_unchanged", 0, {one}),
      c("scalar", 10, {one}, {}),
      c("empty", 10, {one}, {0, 31}),
      c("noncontiguous", 10, {one}, {13, 31}, true),
      c("large", 3, {one}, kLargeStep),
      c("nan_norm_gives_nan", kNaN, {one}),
      // A generated norm, so that the execution-order tests have a case.
      make_case("generated_norm_2_to_50",
                {spec({13, 31}, dt, uniform(-2, 2)), spec({}, s, uniform(2, 50))}, {one}),
      make_case("inf_norm_gives_zeros_and_nan",
                {explicit_values({5}, dt, {1, -1, 0, kInf, kNaN}), explicit_values({}, s, {kInf})},
                {one}),
  };
}

}  // namespace

std::optional<std::vector<OpCase>> optimizer_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                   uint32_t claimed) {
  (void)claimed;
  const std::string op = schema.name;
  if (op == "sgd") return sgd_cases(dtype);
  if (op == "adam" || op == "adamw") return adam_cases(dtype, op == "adamw");
  if (op == "grad_norm") return grad_norm_cases(dtype);
  if (op == "clip_grad_norm") return clip_cases(dtype);
  return std::nullopt;
}

std::optional<Family> optimizer_family(const ops::OpSchema& schema) {
  // A few arithmetic operations, a square root and a division per element.
  if (in_set(schema.name, {"sgd", "adam", "adamw"})) return Family::kTranscendental;
  if (in_set(schema.name, {"grad_norm"})) return Family::kAccumulate;  // a sum of squares
  if (in_set(schema.name, {"clip_grad_norm"})) return Family::kArith;
  return std::nullopt;
}

}  // namespace oar::conformance::cases
