// opencl kernels of the fused optimizer steps and the gradient-norm clip
// (core/ops/schema_optimizer.cc); the OpenCL C side is kernels/optimizer.cl.
#include "kernels/kernel.h"

namespace oar::opencl {

void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::opencl
