// scaled_dot_product_attention ignores causal_alignment: a plugin written
// before the attribute existed masks bottom-right always. Identical to the
// right answer without causal, for Lq = Lk, and for bottom_right itself.
#include <cstring>
#include <vector>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "scaled_dot_product_attention"; }

oar_status_t ignores_alignment_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "causal_alignment") != 0) attrs.push_back(call->attrs[i]);
  }
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  copy.num_attrs = attrs.size();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, ignores_alignment_kernel); }

}  // namespace oar_defect
