// sgd applies the momentum formula on every step, the first included
// (buffer = momentum * buffer + (1 - dampening) * grad), where PyTorch starts
// the buffer as the undamped gradient. Right for every later step, and on
// the first for a zeroed buffer with dampening 0; wrong for a first step
// with dampening or with whatever the buffer input holds.
#include <cstring>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "sgd"; }

oar_status_t every_step_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs(call->attrs, call->attrs + call->num_attrs);
  for (oar_attr_t& a : attrs) {
    if (std::strcmp(a.name, "step") == 0 && a.value.i == 1) a.value.i = 2;
  }
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, every_step_kernel); }

}  // namespace oar_defect
