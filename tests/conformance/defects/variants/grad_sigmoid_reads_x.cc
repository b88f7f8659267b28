// sigmoid_grad takes its second input for the forward input x and computes
// dy * sigmoid(x) * (1 - sigmoid(x)), where OAR passes the forward output y
// (docs/ops.md, "Gradients"): the mix-up of frameworks that save x, not y.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "sigmoid_grad"; }

oar_status_t from_x_kernel(const oar_kernel_call_t* call) {
  const HostView dy = host_view(call->inputs[0]), b = host_view(call->inputs[1]);
  const HostView dx = host_view(call->outputs[0]);
  return in_stream_order(call, [=] {
    for (int64_t i = 0; i < dx.numel(); ++i) {
      const double s = 1 / (1 + std::exp(-b.get(i)));
      dx.set(i, dy.get(i) * s * (1 - s));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, from_x_kernel); }

}  // namespace oar_defect
