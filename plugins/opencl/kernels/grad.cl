// OpenCL C kernels of the pointwise, row and index gradients for one dtype (see common.cl).
