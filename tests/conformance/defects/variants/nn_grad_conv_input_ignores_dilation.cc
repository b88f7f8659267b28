// conv2d_grad_input ignores dilation (a transposed-convolution kernel written
// for dense filters): right for every call with dilation 1, wrong wherever
// the forward call spread its taps.
#include <cstring>
#include <vector>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "conv2d_grad_input"; }

oar_status_t ignores_dilation_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "dilation") != 0) attrs.push_back(call->attrs[i]);
  }
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  copy.num_attrs = attrs.size();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, ignores_dilation_kernel); }

}  // namespace oar_defect
