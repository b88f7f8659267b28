// vulkan kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc); their shaders are listed in shaders/nn_grad.cmake.
#include "kernels/kernel.h"

namespace oar::vulkan {

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::vulkan
