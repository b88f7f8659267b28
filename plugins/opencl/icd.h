// The OpenCL entry points the plugin uses, loaded from the ICD loader with
// dlopen on first use rather than linked: on a machine without the loader
// (no libOpenCL.so.1) the plugin still loads and serves zero devices, saying
// why, instead of failing to load. OAR_OPENCL_LIBRARY names another loader or
// a vendor's libOpenCL directly (ignored in setuid processes).
#pragma once

#include <CL/cl.h>

#include <string>

namespace oar::opencl {

// clang-format off
#define OAR_CL_FUNCTIONS(X)                                                                       \
  X(clBuildProgram) X(clCreateBuffer) X(clCreateCommandQueue) X(clCreateContext)                  \
  X(clCreateKernel) X(clCreateProgramWithBinary) X(clCreateProgramWithSource)                     \
  X(clCreateUserEvent) X(clEnqueueBarrierWithWaitList) X(clEnqueueCopyBuffer)                     \
  X(clEnqueueFillBuffer) X(clEnqueueMarkerWithWaitList) X(clEnqueueNDRangeKernel)                 \
  X(clEnqueueReadBuffer) X(clEnqueueWriteBuffer) X(clFinish) X(clFlush) X(clGetDeviceIDs)         \
  X(clGetDeviceInfo) X(clGetEventInfo) X(clGetEventProfilingInfo) X(clGetPlatformIDs)             \
  X(clGetPlatformInfo) X(clGetProgramBuildInfo) X(clGetProgramInfo) X(clReleaseCommandQueue)      \
  X(clReleaseContext) X(clReleaseEvent) X(clReleaseKernel) X(clReleaseMemObject)                  \
  X(clReleaseProgram) X(clSetKernelArg) X(clSetUserEventStatus) X(clWaitForEvents)
// clang-format on

struct ClApi {
#define OAR_CL_POINTER(name) decltype(&::name) name = nullptr;
  OAR_CL_FUNCTIONS(OAR_CL_POINTER)
#undef OAR_CL_POINTER
};

// Loads the ICD loader once per process. Returns nullptr and explains why
// in |why| (which library, which symbol, how to fix it) when it cannot.
const ClApi* load_cl_api(std::string* why);

// The loaded entry points; throws UNAVAILABLE with the reason if the loader
// is absent (no device exists then, so plugin slots never get here).
const ClApi& cl();

}  // namespace oar::opencl
