// clip on f32 written as fmin(fmax(x, min), max): C's fmax and fmin return
// the other operand for a NaN, so a NaN element of x comes out as a bound
// and a NaN bound is ignored. Same-shape calls have the defect; broadcasting
// ones go to the real kernel.
#include <cmath>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "clip" && all_dtypes(kernel, kDLFloat, 32);
}

oar_status_t fmax_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), lo = host_view(call->inputs[1]);
  const HostView hi = host_view(call->inputs[2]), y = host_view(call->outputs[0]);
  if (x.shape != y.shape || lo.shape != y.shape || hi.shape != y.shape) return call_real(call);
  return in_stream_order(call, [x, lo, hi, y] {
    for (int64_t i = 0; i < y.numel(); ++i) {
      y.set(i, std::fmin(std::fmax(x.get(i), lo.get(i)), hi.get(i)));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, fmax_kernel); }

}  // namespace oar_defect
