// Every kernel writes one element before the start of its first output (an
// index computed as i - 1 from 0): the extra element repeats the first one.
// Written in stream order, after the real kernel; every result is right.
#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.num_outputs > 0; }

oar_status_t underrunning_kernel(const oar_kernel_call_t* call) {
  oar_status_t status = call_real(call);
  const DLTensor& out = call->outputs[0];
  if (status != OAR_STATUS_OK || numel(out) == 0) return status;
  const size_t size = element_size(out);
  char* first = host_address(out);
  return in_stream_order(call->stream, [first, size](oar_status_t s) {
    if (s == OAR_STATUS_OK) std::memcpy(first - size, first, size);  // the defect
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, underrunning_kernel); }

}  // namespace oar_defect
