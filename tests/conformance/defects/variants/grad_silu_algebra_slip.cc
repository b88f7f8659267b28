// silu_grad with an algebra slip: dy * s * (1 + x * s) instead of
// dy * s * (1 + x * (1 - s)), s = sigmoid(x). A reference written by the same
// hand would agree with it; the gradient check's finite differences of the
// device's own silu do not (registered with a filter that runs only them).
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "silu_grad"; }

oar_status_t slipped_kernel(const oar_kernel_call_t* call) {
  const HostView dy = host_view(call->inputs[0]), x = host_view(call->inputs[1]);
  const HostView dx = host_view(call->outputs[0]);
  return in_stream_order(call, [=] {
    for (int64_t i = 0; i < dx.numel(); ++i) {
      const double s = 1 / (1 + std::exp(-x.get(i)));
      dx.set(i, dy.get(i) * s * (1 + x.get(i) * s));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, slipped_kernel); }

}  // namespace oar_defect
