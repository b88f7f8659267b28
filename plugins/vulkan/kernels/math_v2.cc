// vulkan kernels of the operator set v2 math operators (core/ops/schema_math_v2.cc);
// their shaders are listed in shaders/math_v2.cmake.
#include "kernels/kernel.h"

namespace oar::vulkan {

void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::vulkan
