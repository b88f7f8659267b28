// Schema entries and shape rules of the fused optimizer steps and the global gradient-norm clip
// (issue 14). docs/ops.md ("Optimizer steps") states their semantics.
//
// An optimizer step updates a parameter and its state "in place": its outputs
// are the new parameter and the new state, and a caller that wants the update
// in place binds each output to the same memory as the matching input. Kernels
// must be correct both when the outputs alias the inputs element for element
// and when they are separate tensors. The state of an f16 or bf16 parameter
// is f32 (mixed-precision training keeps its moments wider than the weights).
#include <cmath>

#include "core/ops/schema_parts.h"
#include "oar/dtype.hpp"

namespace oar::ops::detail {
namespace {

// The state dtype of a parameter of |param|: f32 for f16 and bf16, else itself.
DLDataType state_dtype(DLDataType param) {
  const uint32_t bit = dtype_bit(param);
  return (bit == kF16 || bit == kBF16) ? dtype::f32 : param;
}

// Inputs: param, grad, then the state tensors; outputs: param, then the state
// tensors. param and grad share a float dtype; every state tensor has
// state_dtype(param).
void check_step_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                       const DLTensor* outputs, size_t num_outputs) {
  const DLDataType p = inputs[0].dtype;
  if ((dtype_bit(p) & schema.dtypes) == 0) fail(schema, "does not take " + dtype_name(p));
  const DLDataType s = state_dtype(p);
  const std::string state_text =
      "the state tensors must be " + dtype_name(s) + " for " + dtype_name(p) + " parameters";
  if (!(inputs[1].dtype == p)) fail(schema, "grad must have param's dtype " + dtype_name(p));
  for (size_t i = 2; i < num_inputs; ++i) {
    if (!(inputs[i].dtype == s)) fail(schema, state_text);
  }
  if (!(outputs[0].dtype == p)) fail(schema, "param_out must have param's dtype " + dtype_name(p));
  for (size_t i = 1; i < num_outputs; ++i) {
    if (!(outputs[i].dtype == s)) fail(schema, state_text);
  }
}

std::vector<DLDataType> sgd_dtypes(const OpSchema&, DLDataType p) { return {p, state_dtype(p)}; }
std::vector<DLDataType> adam_dtypes(const OpSchema&, DLDataType p) {
  return {p, state_dtype(p), state_dtype(p)};
}

void need_finite_nonnegative(const OpSchema& schema, const Attrs& attrs, const char* name) {
  const double v = attrs.get_float(name);
  if (!(std::isfinite(v) && v >= 0)) {
    fail(schema, std::string(name) + " must be finite and >= 0, got " + std::to_string(v));
  }
}

// Every input has param's shape; each output too. Attributes are checked here
// so that every plugin refuses the same calls with the same words.
std::vector<Shape> step_shapes(const OpSchema& schema, const std::vector<Shape>& inputs,
                               const Attrs& attrs) {
  for (size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i] != inputs[0]) {
      fail(schema, std::string(schema.inputs[i].name) + " has shape " + shape_text(inputs[i]) +
                       ", param " + shape_text(inputs[0]) + " (they must be equal)");
    }
  }
  if (attrs.get_int("step") < 1) {
    fail(schema,
         "step must be >= 1 (the first step is 1), got " + std::to_string(attrs.get_int("step")));
  }
  need_finite_nonnegative(schema, attrs, "lr");
  need_finite_nonnegative(schema, attrs, "weight_decay");
  if (std::string(schema.name) == "sgd") {
    need_finite_nonnegative(schema, attrs, "momentum");
    need_finite_nonnegative(schema, attrs, "dampening");
    if (attrs.get_bool("nesterov") &&
        (attrs.get_float("momentum") <= 0 || attrs.get_float("dampening") != 0)) {
      fail(schema, "nesterov needs momentum > 0 and dampening 0");
    }
  } else {
    for (const char* beta : {"beta1", "beta2"}) {
      const double b = attrs.get_float(beta);
      if (!(b >= 0 && b < 1)) {
        fail(schema, std::string(beta) + " must be in [0, 1), got " + std::to_string(b));
      }
    }
    need_finite_nonnegative(schema, attrs, "eps");
  }
  return std::vector<Shape>(schema.outputs.size(), inputs[0]);
}

OpSchema adam_like(const char* name, double weight_decay, const char* summary) {
  OpSchema schema{name,
                  "optimizer",
                  {{"param"}, {"grad"}, {"exp_avg"}, {"exp_avg_sq"}},
                  {"param_out", "exp_avg_out", "exp_avg_sq_out"},
                  {required("lr", kFloat), required("step", kInt), float_attr("beta1", 0.9),
                   float_attr("beta2", 0.999), float_attr("eps", 1e-8),
                   float_attr("weight_decay", weight_decay)},
                  kFloats,
                  DtypeRule::kCustom,
                  -1,
                  summary};
  schema.shape_fn = &step_shapes;
  schema.check_dtypes_fn = &check_step_dtypes;
  schema.output_dtypes_fn = &adam_dtypes;
  return schema;
}

// grad_norm: one or more gradients of one float dtype; the norm is f32 (f64
// for f64 gradients).
void check_norm_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t num_inputs,
                       const DLTensor* outputs, size_t num_outputs) {
  (void)num_outputs;
  const DLDataType g = inputs[0].dtype;
  if ((dtype_bit(g) & schema.dtypes) == 0) fail(schema, "does not take " + dtype_name(g));
  for (size_t i = 1; i < num_inputs; ++i) {
    if (!(inputs[i].dtype == g)) fail(schema, "every gradient must be " + dtype_name(g));
  }
  if (!(outputs[0].dtype == state_dtype(g))) {
    fail(schema, "total_norm must be " + dtype_name(state_dtype(g)) + " for " + dtype_name(g) +
                     " gradients");
  }
}
std::vector<DLDataType> norm_dtypes(const OpSchema&, DLDataType g) { return {state_dtype(g)}; }

std::vector<Shape> norm_shapes(const OpSchema& schema, const std::vector<Shape>&,
                               const Attrs& attrs) {
  const double p = attrs.get_float("norm_type");
  if (!(p == 1 || p == 2 || (std::isinf(p) && p > 0))) {
    fail(schema, "norm_type must be 1, 2 or inf, got " + std::to_string(p));
  }
  return {Shape{}};
}

// clip_grad_norm: grad (a float dtype), total_norm (its state dtype).
void check_clip_dtypes(const OpSchema& schema, const DLTensor* inputs, size_t,
                       const DLTensor* outputs, size_t) {
  const DLDataType g = inputs[0].dtype;
  if ((dtype_bit(g) & schema.dtypes) == 0) fail(schema, "does not take " + dtype_name(g));
  if (!(inputs[1].dtype == state_dtype(g))) {
    fail(schema, "total_norm must be " + dtype_name(state_dtype(g)) + " for " + dtype_name(g) +
                     " gradients");
  }
  if (!(outputs[0].dtype == g)) fail(schema, "grad_out must have grad's dtype " + dtype_name(g));
}
std::vector<DLDataType> clip_dtypes(const OpSchema&, DLDataType g) { return {g}; }

std::vector<Shape> clip_shapes(const OpSchema& schema, const std::vector<Shape>& inputs,
                               const Attrs& attrs) {
  if (!inputs[1].empty()) {
    fail(schema, "total_norm must be a scalar (rank 0), got " + shape_text(inputs[1]));
  }
  const double max_norm = attrs.get_float("max_norm"), eps = attrs.get_float("eps");
  if (!(max_norm >= 0) || !(std::isfinite(eps) && eps >= 0)) {
    fail(schema, "max_norm must be >= 0 and eps finite and >= 0");
  }
  return {inputs[0]};
}

}  // namespace

void add_optimizer_schemas(std::vector<OpSchema>& s) {
  OpSchema sgd{
      "sgd",
      "optimizer",
      {{"param"}, {"grad"}, {"momentum_buffer"}},
      {"param_out", "momentum_buffer_out"},
      {required("lr", kFloat), required("step", kInt), float_attr("momentum", 0),
       float_attr("dampening", 0), float_attr("weight_decay", 0), bool_attr("nesterov", false)},
      kFloats,
      DtypeRule::kCustom,
      -1,
      "one SGD step (PyTorch's: momentum, dampening, weight decay, Nesterov)"};
  sgd.shape_fn = &step_shapes;
  sgd.check_dtypes_fn = &check_step_dtypes;
  sgd.output_dtypes_fn = &sgd_dtypes;
  s.push_back(std::move(sgd));
  s.push_back(adam_like("adam", 0, "one Adam step (L2 weight decay added to the gradient)"));
  s.push_back(adam_like("adamw", 0.01, "one AdamW step (decoupled weight decay)"));
  OpSchema norm{"grad_norm",
                "optimizer",
                {{"grads", false, true}},
                {"total_norm"},
                {float_attr("norm_type", 2)},
                kFloats,
                DtypeRule::kCustom,
                -1,
                "the norm of all gradients together (1, 2 or inf)"};
  norm.shape_fn = &norm_shapes;
  norm.check_dtypes_fn = &check_norm_dtypes;
  norm.output_dtypes_fn = &norm_dtypes;
  s.push_back(std::move(norm));
  OpSchema clip{"clip_grad_norm",
                "optimizer",
                {{"grad"}, {"total_norm"}},
                {"grad_out"},
                {required("max_norm", kFloat), float_attr("eps", 1e-6)},
                kFloats,
                DtypeRule::kCustom,
                -1,
                "grad scaled by min(1, max_norm / (total_norm + eps))"};
  clip.shape_fn = &clip_shapes;
  clip.check_dtypes_fn = &check_clip_dtypes;
  clip.output_dtypes_fn = &clip_dtypes;
  s.push_back(std::move(clip));
}

}  // namespace oar::ops::detail
