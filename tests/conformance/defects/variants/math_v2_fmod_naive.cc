// fmod on f32 as a - trunc(a / b) * b in f32 (what GLSL's mod and SPIR-V's
// FRem do, with C's sign): right while the quotient fits the precision,
// wrong far beyond every tolerance once it does not (fmod(1e20, 0.3)).
// Broadcasting calls go to the real kernel; same-shape calls are naive.
#include <cmath>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "fmod" && all_dtypes(kernel, kDLFloat, 32);
}

oar_status_t naive_kernel(const oar_kernel_call_t* call) {
  const HostView a = host_view(call->inputs[0]), b = host_view(call->inputs[1]);
  const HostView y = host_view(call->outputs[0]);
  if (a.shape != y.shape || b.shape != y.shape) return call_real(call);
  return in_stream_order(call, [a, b, y] {
    for (int64_t i = 0; i < y.numel(); ++i) {
      const float p = float(a.get(i)), q = float(b.get(i));
      y.set(i, double(p - std::trunc(p / q) * q));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, naive_kernel); }

}  // namespace oar_defect
