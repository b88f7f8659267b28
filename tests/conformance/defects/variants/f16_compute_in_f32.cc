// A correct plugin whose f16 kernels compute in f32 and round the result to
// nearest even, through the same machinery as f16_truncation: the control
// that the rounding checks accept a kernel that computes in a wider type.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  record(kernel);
  if (kernel.op == "copy") return false;
  for (size_t i = kernel.num_inputs; i < kernel.dtypes.size(); ++i) {
    if (is_f16(kernel.dtypes[i])) return true;
  }
  return false;
}

oar_status_t nearest_kernel(const oar_kernel_call_t* call) {
  return compute_in_f32(call, Narrowing::kNearestEven);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, nearest_kernel); }

}  // namespace oar_defect
