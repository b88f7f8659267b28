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
      c("large", {later, attr("momentum", 0.9)}, kLarge1d),
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
      c("large", {later}, kLarge1d),
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

}  // namespace

std::optional<std::vector<OpCase>> optimizer_cases(const ops::OpSchema& schema, DLDataType dtype,
                                                   uint32_t claimed) {
  (void)claimed;
  const std::string op = schema.name;
  if (op == "sgd") return sgd_cases(dtype);
  if (op == "adam" || op == "adamw") return adam_cases(dtype, op == "adamw");
  return std::nullopt;
}

std::optional<Family> optimizer_family(const ops::OpSchema& schema) {
  // A few arithmetic operations, a square root and a division per element.
  if (in_set(schema.name, {"sgd", "adam", "adamw"})) return Family::kTranscendental;
  return std::nullopt;
}

}  // namespace oar::conformance::cases
