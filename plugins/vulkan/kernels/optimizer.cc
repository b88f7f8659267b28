// vulkan kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc); their shaders are listed in shaders/optimizer.cmake.
#include "kernels/kernel.h"

namespace oar::vulkan {

void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::vulkan
