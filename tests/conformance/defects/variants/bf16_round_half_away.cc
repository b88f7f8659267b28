// The f32 -> bf16 cast rounds with (bits + 0x8000) >> 16: to nearest, but
// ties away from zero instead of to even. Right on every value but the exact
// ties, which random data never hits.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "cast" && is_code(kernel.dtypes[0], kDLFloat, 32) &&
         is_bf16(kernel.dtypes[1]);
}

oar_status_t half_away_cast(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  return in_stream_order(call, [x, y] {
    for (int64_t i = 0; i < x.numel(); ++i) y.set(i, x.get(i), Narrowing::kHalfAway);
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, half_away_cast); }

}  // namespace oar_defect
