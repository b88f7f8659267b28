// opencl kernels of the operator set v2 creation and layout operators
// (core/ops/schema_layout_v2.cc); the OpenCL C side is kernels/layout_v2.cl.
#include "kernels/kernel.h"

namespace oar::opencl {

void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::opencl
