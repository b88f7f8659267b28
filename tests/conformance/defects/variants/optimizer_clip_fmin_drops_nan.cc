// clip_grad_norm computes its scale with fmin(1, max_norm / (total_norm +
// eps)), and fmin returns the number when the other argument is NaN: a NaN
// norm leaves the gradients as they are instead of making them NaN, so a
// diverged step goes on silently. Right for every finite norm.
#include <cmath>
#include <cstring>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "clip_grad_norm" && is_f32(kernel.dtypes[1]);
}

oar_status_t fmin_kernel(const oar_kernel_call_t* call) {
  // The real kernel reads a copy of total_norm in which NaN became 0 (a
  // scale of min(1, max_norm / eps) = 1, what fmin gives for NaN).
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  if (call->scratch_allocate(call->scratch_context, 4, &memory, &offset) != OAR_STATUS_OK) {
    return call_real(call);
  }
  DLTensor inputs[2] = {call->inputs[0], call->inputs[1]};
  inputs[1].data = memory;
  inputs[1].byte_offset = offset;
  auto* from = reinterpret_cast<const float*>(host_address(call->inputs[1]));
  auto* to = reinterpret_cast<float*>(host_address(inputs[1]));
  oar_status_t status = in_stream_order(call->stream, [from, to](oar_status_t s) {
    if (s == OAR_STATUS_OK) *to = std::isnan(*from) ? 0.0f : *from;
  });
  if (status != OAR_STATUS_OK) return status;
  oar_kernel_call_t copy = *call;
  copy.inputs = inputs;
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, fmin_kernel); }

}  // namespace oar_defect
