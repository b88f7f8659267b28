// OpenCL C kernels of the fused optimizer steps and the gradient-norm clip for one dtype (see common.cl).
