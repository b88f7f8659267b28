// adam and adamw in two passes, as a vendor splits a kernel that runs out of
// registers: the first writes the new moments, the second re-reads
// exp_avg/exp_avg_sq from the inputs to update the parameter. Right whenever
// the outputs are separate tensors; when a framework binds them to the inputs
// (the in-place update docs/ops.md allows), the second pass reads moments
// the first already overwrote and advances them twice.
#include <cstring>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "adam" || kernel.op == "adamw"; }

size_t bytes_of(const DLTensor& t) {
  size_t n = (t.dtype.bits / 8u) * t.dtype.lanes;
  for (int d = 0; d < t.ndim; ++d) n *= size_t(t.shape[d]);
  return n;
}

// |t| moved to scratch memory of the call (same shape, dtype and strides).
bool to_scratch(const oar_kernel_call_t* call, DLTensor& t) {
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  if (call->scratch_allocate(call->scratch_context, bytes_of(t) + 64, &memory, &offset) !=
      OAR_STATUS_OK) {
    return false;
  }
  t.data = memory;
  t.byte_offset = offset;
  return true;
}

oar_status_t two_pass_kernel(const oar_kernel_call_t* call) {
  std::vector<DLTensor> moments(call->outputs, call->outputs + call->num_outputs);
  std::vector<DLTensor> parameter = moments;
  if (!to_scratch(call, moments[0])) return call_real(call);
  for (size_t i = 1; i < parameter.size(); ++i) {
    if (!to_scratch(call, parameter[i])) return call_real(call);
  }
  oar_kernel_call_t copy = *call;
  copy.outputs = moments.data();  // pass 1: the moments (the parameter goes to scratch)
  oar_status_t status = call_real(call, copy);
  if (status != OAR_STATUS_OK) return status;
  copy.outputs = parameter.data();  // pass 2: the parameter, re-reading the moments
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, two_pass_kernel); }

}  // namespace oar_defect
