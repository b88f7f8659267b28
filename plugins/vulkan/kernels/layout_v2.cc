// vulkan kernels of the operator set v2 creation and layout operators
// (core/ops/schema_layout_v2.cc); their shaders are listed in shaders/layout_v2.cmake.
#include "kernels/kernel.h"

namespace oar::vulkan {

void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::vulkan
