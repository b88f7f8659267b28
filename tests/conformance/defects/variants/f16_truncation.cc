// f16 kernels compute in f32 and narrow the result by truncation (toward
// zero) instead of to nearest: every result within one f16 ulp, inside a
// 1e-3 relative tolerance, but biased by half an ulp toward zero.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  record(kernel);
  if (kernel.op == "cast" || kernel.op == "copy") return false;  // conversions are right
  for (size_t i = kernel.num_inputs; i < kernel.dtypes.size(); ++i) {
    if (is_f16(kernel.dtypes[i])) return true;
  }
  return false;
}

oar_status_t truncating_kernel(const oar_kernel_call_t* call) {
  return compute_in_f32(call, Narrowing::kTruncate);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, truncating_kernel); }

}  // namespace oar_defect
