// logical_and/or/xor on bool applied to the stored bytes (a & b, a | b,
// a ^ b) instead of to truth values: right for the bytes 0 and 1, wrong for
// any other nonzero byte, which docs/ops.md says is true (2 & 1 = 0).
#include <cstdint>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "logical_and" || kernel.op == "logical_or" || kernel.op == "logical_xor";
}

oar_status_t bytes_kernel(const oar_kernel_call_t* call) {
  const HostView a = host_view(call->inputs[0]), b = host_view(call->inputs[1]);
  const HostView y = host_view(call->outputs[0]);
  if (a.shape != y.shape || b.shape != y.shape) return call_real(call);
  const char kind = real_kernel(call).op[8];  // logical_[a]nd, [o]r, [x]or
  return in_stream_order(call, [a, b, y, kind] {
    const auto* pa = reinterpret_cast<const uint8_t*>(a.data);
    const auto* pb = reinterpret_cast<const uint8_t*>(b.data);
    auto* py = reinterpret_cast<uint8_t*>(y.data);
    for (int64_t i = 0; i < y.numel(); ++i) {
      py[i] = kind == 'a' ? pa[i] & pb[i] : kind == 'o' ? pa[i] | pb[i] : pa[i] ^ pb[i];
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, bytes_kernel); }

}  // namespace oar_defect
