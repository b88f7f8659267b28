// cpu kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc).
#include "kernels/kernel.h"

namespace oar::cpu {

void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar,
                                AllocationTable* table) {
  (void)registrar, (void)table;
}

}  // namespace oar::cpu
