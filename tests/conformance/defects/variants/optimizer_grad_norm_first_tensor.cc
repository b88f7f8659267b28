// grad_norm over its first gradient only, as a kernel written for one tensor
// and registered for the variadic operator: right for a model with one
// parameter tensor, too small for every real one.
#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "grad_norm"; }

oar_status_t first_only_kernel(const oar_kernel_call_t* call) {
  oar_kernel_call_t copy = *call;
  copy.num_inputs = 1;
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, first_only_kernel); }

}  // namespace oar_defect
