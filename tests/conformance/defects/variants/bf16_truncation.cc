// bf16 kernels compute in f32 and narrow the result by truncation (toward
// zero) instead of to nearest, as dropping the low 16 bits of an f32 does:
// every result within one bf16 ulp, inside the 1e-2 relative tolerance, but
// biased by half an ulp toward zero. Casts stay right.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  record(kernel);
  if (kernel.op == "cast" || kernel.op == "copy") return false;  // conversions are right
  for (size_t i = kernel.num_inputs; i < kernel.dtypes.size(); ++i) {
    if (is_bf16(kernel.dtypes[i])) return true;
  }
  return false;
}

oar_status_t truncating_kernel(const oar_kernel_call_t* call) {
  return compute_in_f32(call, Narrowing::kTruncate);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, truncating_kernel); }

}  // namespace oar_defect
