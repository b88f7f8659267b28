// opencl kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc); the OpenCL C side is kernels/optimizer.cl.
// Attributes are turned into the few constants the kernels need here, in
// double, and passed as real_arg (double where the device has fp64).
#include <cmath>
#include <string>
#include <utility>

#include "kernels/kernel.h"

namespace oar::opencl {
namespace {

void sgd_body(KernelContext& c) {
  const View &p = c.inputs[0], &g = c.inputs[1], &b = c.inputs[2];
  const View &p_out = c.outputs[0], &b_out = c.outputs[1];
  const int64_t n = p.numel();
  if (n == 0) return;
  const double momentum = c.attrs.get_float("momentum");
  const double decay = c.attrs.get_float("weight_decay");
  const cl_int flags = (c.attrs.get_int("step") == 1 ? 1 : 0) |
                       (c.attrs.get_bool("nesterov") ? 2 : 0) | (momentum != 0 ? 4 : 0) |
                       (decay != 0 ? 8 : 0);
  cl_ulong po = p.offset, go = g.offset, bo = b.offset, p_outo = p_out.offset,
           b_outo = b_out.offset;
  cl_long count = n;
  c.launch(Source::kOptimizer, p.dtype, "sgd", n,
           {p.memory, po, g.memory, go, b.memory, bo, p_out.memory, p_outo, b_out.memory, b_outo,
            count, real_arg(c.real(c.attrs.get_float("lr"))), real_arg(c.real(momentum)),
            real_arg(c.real(1 - c.attrs.get_float("dampening"))), real_arg(c.real(decay)), flags});
}

void adam_body(KernelContext& c) {
  const View &p = c.inputs[0], &g = c.inputs[1], &m = c.inputs[2], &v = c.inputs[3];
  const View &p_out = c.outputs[0], &m_out = c.outputs[1], &v_out = c.outputs[2];
  const int64_t n = p.numel();
  if (n == 0) return;
  const bool decoupled = std::string(c.schema.name) == "adamw";
  const double lr = c.attrs.get_float("lr"), b1 = c.attrs.get_float("beta1");
  const double b2 = c.attrs.get_float("beta2"), decay = c.attrs.get_float("weight_decay");
  const double step = double(c.attrs.get_int("step"));
  const cl_int flags = (decoupled ? 1 : 0) | (decay != 0 ? 2 : 0);
  cl_ulong po = p.offset, go = g.offset, mo = m.offset, vo = v.offset, p_outo = p_out.offset,
           m_outo = m_out.offset, v_outo = v_out.offset;
  cl_long count = n;
  c.launch(Source::kOptimizer, p.dtype, "adam", n,
           {p.memory,
            po,
            g.memory,
            go,
            m.memory,
            mo,
            v.memory,
            vo,
            p_out.memory,
            p_outo,
            m_out.memory,
            m_outo,
            v_out.memory,
            v_outo,
            count,
            real_arg(c.real(lr / (1 - std::pow(b1, step)))),
            real_arg(c.real(std::sqrt(1 - std::pow(b2, step)))),
            real_arg(c.real(1 - lr * decay)),
            real_arg(c.real(b1)),
            real_arg(c.real(b2)),
            real_arg(c.real(c.attrs.get_float("eps"))),
            real_arg(c.real(decay)),
            flags});
}

// Scratch memory of |bytes|, 8-byte aligned: (buffer, byte offset).
std::pair<Buffer, cl_ulong> scratch(KernelContext& c, uint64_t bytes) {
  oar::sdk::require(c.call->scratch_allocate != nullptr, OAR_STATUS_INTERNAL,
                    "the kernel call has no scratch allocator");
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  oar_status_t status =
      c.call->scratch_allocate(c.call->scratch_context, bytes + 8, &memory, &offset);
  oar::sdk::require(status == OAR_STATUS_OK, status, "grad_norm: scratch_allocate failed");
  return {static_cast<Buffer>(memory), (offset + 7) / 8 * 8};
}

// Partials of kChunk elements per work-item for each gradient, combined
// kChunk at a time until one pass can finish the norm.
void grad_norm_body(KernelContext& c) {
  constexpr int64_t kChunk = 1024;
  const double p = c.attrs.get_float("norm_type");
  const cl_int kind = p == 1 ? 0 : p == 2 ? 1 : 2;
  const DLDataType dtype = c.inputs[0].dtype;
  int64_t count = 0;
  for (const View& g : c.inputs) count += (g.numel() + kChunk - 1) / kChunk;
  auto [a, ao] = scratch(c, uint64_t(count) * 8);
  cl_long chunk = kChunk;
  int64_t at = 0;
  for (const View& g : c.inputs) {
    const int64_t n = g.numel();
    if (n == 0) continue;
    cl_ulong go = g.offset, po = ao + cl_ulong(at) * 8;
    cl_long elements = n;
    const int64_t items = (n + kChunk - 1) / kChunk;
    c.launch(Source::kOptimizer, dtype, "norm_partials", items,
             {g.memory, go, elements, chunk, a, po, kind});
    at += items;
  }
  Buffer from = a;
  cl_ulong from_offset = ao;
  while (count > kChunk) {
    const int64_t items = (count + kChunk - 1) / kChunk;
    auto [b, bo] = scratch(c, uint64_t(items) * 8);
    cl_long n = count;
    c.launch(Source::kOptimizer, dtype, "norm_combine", items,
             {from, from_offset, n, chunk, b, bo, kind});
    from = b;
    from_offset = bo;
    count = items;
  }
  const View& y = c.outputs[0];
  cl_long n = count;
  cl_ulong yo = y.offset;
  c.launch(Source::kOptimizer, dtype, "norm_final", 1, {from, from_offset, n, y.memory, yo, kind});
}

void clip_body(KernelContext& c) {
  const View &g = c.inputs[0], &total = c.inputs[1], &y = c.outputs[0];
  const int64_t n = g.numel();
  if (n == 0) return;
  cl_ulong go = g.offset, to = total.offset, yo = y.offset;
  cl_long count = n;
  c.launch(Source::kOptimizer, g.dtype, "clip_grad_norm", n,
           {g.memory, go, total.memory, to, y.memory, yo, count,
            real_arg(c.real(c.attrs.get_float("max_norm"))),
            real_arg(c.real(c.attrs.get_float("eps")))});
}

// param and grad of each float dtype; state f32 (f64 for f64 parameters).
std::vector<std::vector<DLDataType>> step_signatures(size_t states) {
  std::vector<std::vector<DLDataType>> all;
  for (DLDataType p : ops::dtypes_in(ops::kFloats)) {
    const DLDataType s = p == dtype::f64 ? dtype::f64 : dtype::f32;
    std::vector<DLDataType> signature = {p, p};
    signature.insert(signature.end(), states, s);
    signature.push_back(p);
    signature.insert(signature.end(), states, s);
    all.push_back(signature);
  }
  return all;
}

}  // namespace

void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar) {
  register_op(registrar, "sgd", sgd_body, step_signatures(1));
  register_op(registrar, "adam", adam_body, step_signatures(2));
  register_op(registrar, "adamw", adam_body, step_signatures(2));
  std::vector<std::vector<DLDataType>> norm, clip;
  for (DLDataType g : ops::dtypes_in(ops::kFloats)) {
    const DLDataType s = g == dtype::f64 ? dtype::f64 : dtype::f32;
    for (size_t n = 1; n <= oar::sdk::kMaxVariadicInputs; ++n) {
      std::vector<DLDataType> signature(n, g);
      signature.push_back(s);
      norm.push_back(signature);
    }
    clip.push_back({g, s, g});
  }
  register_op(registrar, "grad_norm", grad_norm_body, norm);
  register_op(registrar, "clip_grad_norm", clip_body, clip);
}

}  // namespace oar::opencl
