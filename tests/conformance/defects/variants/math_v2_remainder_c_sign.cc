// Integer remainder with C's % (the sign of the dividend) instead of
// Python's (the sign of the divisor): -7 remainder 3 gives -1, not 2. It
// guards b = 0 and -1 as the spec says, so only the sign convention is wrong.
// Broadcasting calls go to the real kernel; same-shape calls have the defect.
#include <cstdint>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "remainder" && all_dtypes(kernel, kDLInt, 32);
}

oar_status_t c_sign_kernel(const oar_kernel_call_t* call) {
  const HostView a = host_view(call->inputs[0]), b = host_view(call->inputs[1]);
  const HostView y = host_view(call->outputs[0]);
  if (a.shape != y.shape || b.shape != y.shape) return call_real(call);
  return in_stream_order(call, [a, b, y] {
    const auto* pa = reinterpret_cast<const int32_t*>(a.data);
    const auto* pb = reinterpret_cast<const int32_t*>(b.data);
    auto* py = reinterpret_cast<int32_t*>(y.data);
    for (int64_t i = 0; i < y.numel(); ++i) {
      py[i] = pb[i] == 0 || pb[i] == -1 ? 0 : pa[i] % pb[i];
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, c_sign_kernel); }

}  // namespace oar_defect
