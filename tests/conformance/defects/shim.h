// The shared half of every defect variant of the cpu plugin.
//
// A variant is a test-only plugin that is the real cpu plugin with ONE defect:
// shim.cc dlopens the real plugin (OAR_DEFECT_REAL_PLUGIN, baked in at build
// time), copies its table, renames it OAR_DEFECT_PLUGIN_NAME and lets the
// variant (variants/<name>.cc) replace slots through install(). oar-conform
// must refuse to certify every variant; a few "benign" variants (slow, helper
// process) must still certify.
#pragma once

#include <string>
#include <vector>

#include "oar/plugin.h"

namespace oar_defect {

// The real cpu plugin's table; set before install() runs, for the process's life.
extern const oar_plugin_api_t* real;

// Defined by each variant: replaces slots of |table|, a copy of *real.
void install(oar_plugin_api_t& table);

// A kernel as the real plugin registered it, for replacements to reach it.
struct RealKernel {
  std::string op;
  std::vector<DLDataType> dtypes;  // inputs, then outputs
  size_t num_inputs = 0;
  size_t num_outputs = 0;
  uint32_t flags = 0;
  oar_kernel_fn fn = nullptr;
  void* user_data = nullptr;
};

// Makes |table|'s register_kernels forward every registration to the core,
// with |replacement| registered instead of each kernel that |affected| selects.
// The replacement finds the real kernel through real_kernel(call).
using KernelFilter = bool (*)(const RealKernel& kernel);
void wrap_kernels(oar_plugin_api_t& table, KernelFilter affected, oar_kernel_fn replacement);
const RealKernel& real_kernel(const oar_kernel_call_t* call);
// Calls the real kernel with |call| (or a modified copy of it, whose user_data
// is ignored) as it would have been called without the defect.
oar_status_t call_real(const oar_kernel_call_t* call, const oar_kernel_call_t& copy);
inline oar_status_t call_real(const oar_kernel_call_t* call) { return call_real(call, *call); }

bool is_f32(const DLDataType& type);
// Whether every dtype of |kernel| is |code|/|bits|.
bool all_dtypes(const RealKernel& kernel, uint8_t code, uint8_t bits);

}  // namespace oar_defect
