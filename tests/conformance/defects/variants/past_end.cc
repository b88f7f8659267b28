// Every kernel writes one element past the end of its first output (a loop
// bound of <= instead of <): the extra element repeats the last one. Written
// in stream order, after the real kernel; every result is right.
#include <vector>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.num_outputs > 0; }

oar_status_t overrunning_kernel(const oar_kernel_call_t* call) {
  oar_status_t status = call_real(call);
  const DLTensor& out = call->outputs[0];
  if (status != OAR_STATUS_OK || numel(out) == 0 || !contiguous(out)) return status;
  const size_t size = element_size(out);
  char* last = host_address(out) + (numel(out) - 1) * int64_t(size);
  return in_stream_order(call->stream, [last, size](oar_status_t s) {
    if (s == OAR_STATUS_OK) std::memcpy(last + size, last, size);  // the defect
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, overrunning_kernel); }

}  // namespace oar_defect
