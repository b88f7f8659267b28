// vulkan kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc); their shaders are listed in shaders/optimizer.cmake.
// The shaders compute in f32: attributes are turned into the few f32
// constants they need here, in double, and rounded once.
#include <cmath>
#include <string>
#include <utility>

#include "kernels/kernel.h"
#include "oar/sdk/kernel.hpp"

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

// f32 scratch of |elements|: its buffer and element offset.
std::pair<oar_memory_s*, int64_t> scratch(KernelContext& c, int64_t elements) {
  oar::sdk::require(c.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar_status_t status = c.call->scratch_allocate(c.call->scratch_context,
                                                 uint64_t(elements) * 4 + 4, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status, "grad_norm: scratch_allocate failed");
  return {memory, int64_t((offset + 3) / 4)};
}

// Partials of kChunk elements per invocation for each gradient, combined
// kChunk at a time until one invocation can finish the norm (an invocation
// must not loop long on llvmpipe).
void grad_norm_kernel(KernelContext& c) {
  constexpr int64_t kChunk = 1024;
  const double p = c.attrs.get_float("norm_type");
  const int64_t kind = p == 1 ? 0 : p == 2 ? 1 : 2;
  const std::string module = module_name("optimizer_norm", {c.inputs[0].dtype});
  int64_t count = 0;
  for (const TensorRef& g : c.inputs) count += (g.numel() + kChunk - 1) / kChunk;
  auto [a, ao] = scratch(c, count);
  int64_t at = 0;
  for (const TensorRef& g : c.inputs) {
    const int64_t n = g.numel();
    if (n == 0) continue;
    const int64_t items = (n + kChunk - 1) / kChunk;
    Params params;
    for (int64_t v : {items, n, kChunk, g.offset, int64_t(0), ao + at, kind, int64_t(0)}) {
      params.add(v);
    }
    dispatch(c.stream, module, 0, {{0, g.buffer()}, {2, a->buffer.buffer}}, params.data(),
             params.size(), uint64_t(items));
    at += items;
  }
  oar_memory_s* from = a;
  int64_t from_offset = ao;
  while (count > kChunk) {
    const int64_t items = (count + kChunk - 1) / kChunk;
    auto [b, bo] = scratch(c, items);
    Params params;
    for (int64_t v : {items, count, kChunk, int64_t(0), from_offset, bo, kind, int64_t(0)}) {
      params.add(v);
    }
    dispatch(c.stream, module, 1, {{1, from->buffer.buffer}, {2, b->buffer.buffer}}, params.data(),
             params.size(), uint64_t(items));
    from = b;
    from_offset = bo;
    count = items;
  }
  const TensorRef& y = c.outputs[0];
  Params params;
  for (int64_t v :
       {int64_t(1), count, kChunk, int64_t(0), from_offset, int64_t(0), kind, y.offset}) {
    params.add(v);
  }
  dispatch(c.stream, module, 2, {{1, from->buffer.buffer}, {3, y.buffer()}}, params.data(),
           params.size(), 1);
}

void clip_kernel(KernelContext& c) {
  const TensorRef &g = c.inputs[0], &total = c.inputs[1], &y = c.outputs[0];
  const int64_t n = g.numel();
  if (n == 0) return;
  Params params;
  params.add(n);
  params.add(g.offset);
  params.add(total.offset);
  params.add(y.offset);
  params.add_float(float(c.attrs.get_float("max_norm")));
  params.add_float(float(c.attrs.get_float("eps")));
  dispatch(c.stream, module_name("optimizer_norm", {g.dtype}), 3,
           {{0, g.buffer()}, {3, total.buffer()}, {4, y.buffer()}}, params.data(), params.size(),
           uint64_t(n));
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
  std::vector<std::vector<DLDataType>> norm, clip;
  for (DLDataType g : ops::dtypes_in(ops::kF16 | ops::kBF16 | ops::kF32)) {
    for (size_t n = 1; n <= oar::sdk::kMaxVariadicInputs; ++n) {
      std::vector<DLDataType> signature(n, g);
      signature.push_back(dtype::f32);
      norm.push_back(signature);
    }
    clip.push_back({g, dtype::f32, g});
  }
  register_op(registrar, "grad_norm", &grad_norm_kernel, norm);
  register_op(registrar, "clip_grad_norm", &clip_kernel, clip);
}

}  // namespace oar::vulkan
