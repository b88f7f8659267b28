// OpenCL C kernels of the operator set v2 creation and layout operators for one dtype (see common.cl).
