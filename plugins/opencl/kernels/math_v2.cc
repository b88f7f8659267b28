// opencl kernels of the operator set v2 math operators (core/ops/schema_math_v2.cc);
// the OpenCL C side is kernels/math_v2.cl.
#include "kernels/kernel.h"

namespace oar::opencl {

void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar) { (void)registrar; }

}  // namespace oar::opencl
