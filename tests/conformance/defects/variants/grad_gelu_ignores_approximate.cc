// gelu_grad ignores the approximate attribute and always differentiates the
// erf form: right for the default and within tolerance near 0, where the two
// forms agree; off by more than any tolerance in the tails (|x| near 3).
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "gelu_grad"; }

oar_status_t erf_form_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "approximate") != 0) attrs.push_back(call->attrs[i]);
  }
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  copy.num_attrs = attrs.size();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, erf_form_kernel); }

}  // namespace oar_defect
