// logsumexp on f32 as log(sum(exp(x))) without subtracting the maximum:
// right for moderate inputs, inf for rows near +1000 and -inf near -1000.
// Reductions over the last axis have the defect; others go to the real kernel.
#include <cmath>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "logsumexp" && all_dtypes(kernel, kDLFloat, 32);
}

oar_status_t unshifted_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  const std::vector<int64_t> axes = ints_attr(call, "axes");
  const int64_t last = int64_t(x.shape.size()) - 1;
  if (x.shape.empty() || axes.size() != 1 || (axes[0] != -1 && axes[0] != last)) {
    return call_real(call);
  }
  return in_stream_order(call, [x, y] {
    const int64_t len = x.shape.back();
    for (int64_t row = 0; row < y.numel(); ++row) {
      float sum = 0;
      for (int64_t k = 0; k < len; ++k) sum += std::exp(float(x.get(row * len + k)));
      y.set(row, double(std::log(sum)));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, unshifted_kernel); }

}  // namespace oar_defect
