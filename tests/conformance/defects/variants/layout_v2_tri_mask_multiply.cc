// f32 tril/triu computed as x * mask (a mask of ones and zeros multiplied in,
// as a vendor reuses its elementwise mul): right for every finite input, but
// a dropped NaN or infinity gives NaN (NaN * 0, inf * 0) and a dropped
// negative value gives -0 instead of +0.
#include <cmath>
#include <memory>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return (kernel.op == "tril" || kernel.op == "triu") && all_dtypes(kernel, kDLFloat, 32);
}

oar_status_t mask_multiply_kernel(const oar_kernel_call_t* call) {
  const DLTensor& x = call->inputs[0];
  const DLTensor& y = call->outputs[0];
  const int64_t n = numel(y);
  oar_status_t status = call_real(call);
  if (status != OAR_STATUS_OK || n == 0 || !contiguous(x) || !contiguous(y)) return status;
  const auto* in = reinterpret_cast<const float*>(host_address(x));
  auto* out = reinterpret_cast<float*>(host_address(y));
  return in_stream_order(call->stream, [in, out, n](oar_status_t s) {
    if (s != OAR_STATUS_OK) return;
    for (int64_t i = 0; i < n; ++i) {
      // Dropped where the real kernel wrote +0 over a value that is not +0.
      const bool dropped =
          out[i] == 0.0f && !std::signbit(out[i]) && !(in[i] == 0.0f && !std::signbit(in[i]));
      if (dropped) out[i] = in[i] * 0.0f;  // the defect
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, mask_multiply_kernel); }

}  // namespace oar_defect
