// Kernels that declare strided inputs (copy) see their inputs with contiguous
// row-major strides.
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return (kernel.flags & OAR_KERNEL_FLAG_STRIDED_INPUTS) != 0;
}

oar_status_t contiguous_kernel(const oar_kernel_call_t* call) {
  oar_kernel_call_t copy = *call;
  std::vector<DLTensor> inputs(call->inputs, call->inputs + call->num_inputs);
  std::vector<std::vector<int64_t> > strides(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    DLTensor& input = inputs[i];
    strides[i].assign(input.ndim > 0 ? input.ndim : 1, 1);  // never NULL, even for 0-d
    for (int d = input.ndim - 1; d > 0; --d) strides[i][d - 1] = strides[i][d] * input.shape[d];
    input.strides = strides[i].data();
  }
  copy.inputs = inputs.data();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, contiguous_kernel); }

}  // namespace oar_defect
