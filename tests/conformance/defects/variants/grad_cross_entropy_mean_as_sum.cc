// cross_entropy_grad forgets the 1 / N of reduction "mean" (treats it as
// "sum"): right for batches of one row, N times too large otherwise.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "cross_entropy_grad"; }

oar_status_t sum_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "reduction") != 0) attrs.push_back(call->attrs[i]);
  }
  if (string_attr(call, "reduction", "mean") == "mean") {
    oar_attr_t sum{};
    sum.name = "reduction";
    sum.type = OAR_ATTR_TYPE_STRING;
    sum.value.s = "sum";
    attrs.push_back(sum);
  } else {
    attrs.assign(call->attrs, call->attrs + call->num_attrs);
  }
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  copy.num_attrs = attrs.size();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, sum_kernel); }

}  // namespace oar_defect
