// f16 kernels (casts included) run in a flush-to-zero mode: f16 subnormal
// inputs are read as zero and results below the smallest normal (6.1e-5)
// are written as zero. Within any absolute tolerance of 1e-5; docs/ops.md
// requires f16 subnormals to be kept.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  record(kernel);
  if (kernel.op == "copy") return false;  // moves never flush
  for (const DLDataType& t : kernel.dtypes) {
    if (is_f16(t)) return true;
  }
  return false;
}

oar_status_t flushing_kernel(const oar_kernel_call_t* call) {
  return compute_in_f32(call, Narrowing::kNearestFlushed, Narrowing::kNearestFlushed);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, flushing_kernel); }

}  // namespace oar_defect
