// adam and adamw without bias correction (the Adam paper's algorithm 1 minus
// its m-hat and v-hat lines), a slip that trains, only differently: the
// kernel behaves as if step were so large that 1 - beta^step is 1. Right for
// long runs; early steps move the parameter by the wrong amount.
#include <cstring>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "adam" || kernel.op == "adamw"; }

oar_status_t uncorrected_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs(call->attrs, call->attrs + call->num_attrs);
  for (oar_attr_t& a : attrs) {
    if (std::strcmp(a.name, "step") == 0) a.value.i = int64_t(1) << 40;
  }
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, uncorrected_kernel); }

}  // namespace oar_defect
