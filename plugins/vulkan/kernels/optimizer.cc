// vulkan kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc); their shaders are listed in shaders/optimizer.cmake.
// The shaders compute in f32: attributes are turned into the few f32
// constants they need here, in double, and rounded once.
#include <cmath>
#include <string>

#include "kernels/kernel.h"

namespace oar::vulkan {
namespace {

// One dispatch of optimizer_step.comp over the call's n elements.
void step(KernelContext& c, int op, int32_t flags, std::initializer_list<double> constants) {
  const TensorRef& p = c.inputs[0];
  const int64_t n = p.numel();
  if (n == 0) return;
  Params params;
  params.add(n);
  for (size_t i = 0; i < 4; ++i) params.add(i < c.inputs.size() ? c.inputs[i].offset : 0);
  for (size_t i = 0; i < 3; ++i) params.add(i < c.outputs.size() ? c.outputs[i].offset : 0);
  params.add(flags);
  for (double value : constants) params.add_float(float(value));
  std::vector<Binding> bindings;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    bindings.push_back({uint32_t(i), c.inputs[i].buffer()});
  }
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    bindings.push_back({uint32_t(4 + i), c.outputs[i].buffer()});
  }
  dispatch(c.stream, module_name("optimizer_step", {p.dtype}), op, bindings, params.data(),
           params.size(), uint64_t(n));
}

void sgd_kernel(KernelContext& c) {
  const double momentum = c.attrs.get_float("momentum");
  const double decay = c.attrs.get_float("weight_decay");
  const int32_t flags = (c.attrs.get_int("step") == 1 ? 1 : 0) |
                        (c.attrs.get_bool("nesterov") ? 2 : 0) | (momentum != 0 ? 4 : 0) |
                        (decay != 0 ? 8 : 0);
  step(c, 0, flags, {c.attrs.get_float("lr"), momentum, 1 - c.attrs.get_float("dampening"), decay});
}

void adam_kernel(KernelContext& c) {
  const bool decoupled = std::string(c.schema.name) == "adamw";
  const double lr = c.attrs.get_float("lr"), b1 = c.attrs.get_float("beta1");
  const double b2 = c.attrs.get_float("beta2"), decay = c.attrs.get_float("weight_decay");
  const double t = double(c.attrs.get_int("step"));
  const int32_t flags = (decoupled ? 1 : 0) | (decay != 0 ? 2 : 0);
  step(c, 1, flags,
       {lr / (1 - std::pow(b1, t)), std::sqrt(1 - std::pow(b2, t)), 1 - lr * decay, b1, b2,
        c.attrs.get_float("eps"), decay});
}

// f16, bf16 and f32 parameters with f32 state (no f64 shaders).
std::vector<std::vector<DLDataType>> step_signatures(size_t states) {
  std::vector<std::vector<DLDataType>> all;
  for (DLDataType p : ops::dtypes_in(ops::kF16 | ops::kBF16 | ops::kF32)) {
    std::vector<DLDataType> signature = {p, p};
    signature.insert(signature.end(), states, dtype::f32);
    signature.push_back(p);
    signature.insert(signature.end(), states, dtype::f32);
    all.push_back(signature);
  }
  return all;
}

}  // namespace

void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar) {
  register_op(registrar, "sgd", &sgd_kernel, step_signatures(1));
  register_op(registrar, "adam", &adam_kernel, step_signatures(2));
  register_op(registrar, "adamw", &adam_kernel, step_signatures(2));
}

}  // namespace oar::vulkan
