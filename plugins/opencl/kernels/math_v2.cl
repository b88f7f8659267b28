// OpenCL C kernels of the operator set v2 math operators for one dtype (see common.cl).
