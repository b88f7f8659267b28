// flip with no axes (the default, or an empty list) copies x unchanged, as
// PyTorch's flip(x, dims=[]) does, where OAR (like NumPy's flip(x)) flips
// every axis: right for every call that names its axes.
#include <cstring>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "flip"; }

oar_status_t identity_kernel(const oar_kernel_call_t* call) {
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "axes") == 0 && call->attrs[i].value.ints.count > 0) {
      return call_real(call);
    }
  }
  const DLTensor& x = call->inputs[0];
  const DLTensor& y = call->outputs[0];
  if (!contiguous(x) || !contiguous(y)) return call_real(call);
  const char* from = host_address(x);
  char* to = host_address(y);
  const size_t bytes = size_t(numel(y)) * element_size(y);
  return in_stream_order(call->stream, [from, to, bytes](oar_status_t s) {
    if (s == OAR_STATUS_OK && bytes != 0) std::memcpy(to, from, bytes);  // the defect
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, identity_kernel); }

}  // namespace oar_defect
