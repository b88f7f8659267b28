#include "kernels/kernel.h"

namespace oar::cpu {

void CpuPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  require_not_null(registrar, "registrar");
  oar::sdk::KernelRegistrar kernels(registrar);
  register_elementwise_kernels(kernels, &allocations_);
  register_layout_kernels(kernels, &allocations_);
  register_reduction_kernels(kernels, &allocations_);
  register_nn_kernels(kernels, &allocations_);
  register_attention_kernels(kernels, &allocations_);
  register_grad_kernels(kernels, &allocations_);
  register_nn_grad_kernels(kernels, &allocations_);
  register_optimizer_kernels(kernels, &allocations_);
  register_layout_v2_kernels(kernels, &allocations_);
  register_math_v2_kernels(kernels, &allocations_);
}

}  // namespace oar::cpu
