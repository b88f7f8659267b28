// OpenCL C kernels of the gradients of the normalizations, conv2d, pooling and attention for one dtype (see common.cl).
