// arange of i32/i64 computed as float(start) + float(i) * float(step) and
// converted (a vendor reusing its float kernel for integers): exact while
// the values fit in f32's 24 bits, off by a few units beyond.
#include <cstring>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "arange" && kernel.dtypes[0].code == kDLInt;
}

double attr_or(const oar_kernel_call_t* call, const char* name, double fallback) {
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, name) == 0) return call->attrs[i].value.f;
  }
  return fallback;
}

oar_status_t via_float_kernel(const oar_kernel_call_t* call) {
  const DLTensor& y = call->outputs[0];
  const float start = float(attr_or(call, "start", 0)), step = float(attr_or(call, "step", 1));
  const int64_t n = numel(y);
  char* out = host_address(y);
  const bool i32 = y.dtype.bits == 32;
  return in_stream_order(call->stream, [=](oar_status_t s) {
    if (s != OAR_STATUS_OK) return;
    for (int64_t i = 0; i < n; ++i) {
      const float v = start + float(i) * step;  // the defect
      if (i32) {
        reinterpret_cast<int32_t*>(out)[i] = int32_t(v);
      } else {
        reinterpret_cast<int64_t*>(out)[i] = int64_t(v);
      }
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, via_float_kernel); }

}  // namespace oar_defect
