// vulkan kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc);
// their shaders are listed in shaders/grad.cmake.
#include "kernels/kernel.h"

namespace oar::vulkan {

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::vulkan
