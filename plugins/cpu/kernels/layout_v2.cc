// cpu kernels of the operator set v2 creation and layout operators (core/ops/schema_layout_v2.cc).
#include "kernels/kernel.h"

namespace oar::cpu {

void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar,
                                AllocationTable* table) {
  (void)registrar, (void)table;
}

}  // namespace oar::cpu
