// The one place OpenCL status codes become OAR statuses. Every OpenCL call of
// the plugin goes through check(), so that a failure always names the call,
// the OpenCL code by name and, where the code has one, the likely cause.
#pragma once

#include <CL/cl.h>

#include <string>

#include "icd.h"
#include "oar/oar.h"

namespace oar::opencl {

// The name of |code| as the OpenCL headers spell it ("CL_OUT_OF_RESOURCES"),
// or "CL error <code>" for a code the table does not know.
std::string cl_error_name(cl_int code);

// The OAR status a failed OpenCL call maps to.
oar_status_t status_of(cl_int code);

// "<what> failed: <CL_NAME> (<code>)"; the message check() throws.
std::string cl_error_message(cl_int code, const std::string& what);

// Throws oar::sdk::Error(status_of(code), cl_error_message(code, what)) unless
// |code| is CL_SUCCESS.
void check(cl_int code, const char* what);

// The same for clBuildProgram: on CL_BUILD_PROGRAM_FAILURE (or any failure)
// the message carries the build log of |device|, which says what the compiler
// refused.
void check_build(cl_int code, cl_program program, cl_device_id device, const std::string& what);

}  // namespace oar::opencl
