// opencl kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc); the OpenCL C side is kernels/optimizer.cl.
// Attributes are turned into the few constants the kernels need here, in
// double, and passed as real_arg (double where the device has fp64).
#include <cmath>
#include <string>

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
}

}  // namespace oar::opencl
