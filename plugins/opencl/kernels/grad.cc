// opencl kernels of the pointwise, row and index gradients (core/ops/schema_grad.cc);
// the OpenCL C side is kernels/grad.cl.
#include "kernels/kernel.h"

namespace oar::opencl {

void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::opencl
