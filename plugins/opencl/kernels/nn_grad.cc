// opencl kernels of the gradients of the normalizations, conv2d, pooling and attention
// (core/ops/schema_nn_grad.cc); the OpenCL C side is kernels/nn_grad.cl.
#include "kernels/kernel.h"

namespace oar::opencl {

void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::opencl
