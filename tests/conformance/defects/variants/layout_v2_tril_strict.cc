// tril keeps j - i < diagonal instead of j - i <= diagonal (the strict lower
// triangle at diagonal 0, a vendor reading "below the diagonal" too
// literally): right wherever the diagonal band is empty, wrong on it.
#include <cstdint>
#include <cstring>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "tril"; }

oar_status_t strict_kernel(const oar_kernel_call_t* call) {
  int64_t diagonal = 0;
  std::vector<oar_attr_t> attrs;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "diagonal") == 0) {
      diagonal = call->attrs[i].value.i;
    } else {
      attrs.push_back(call->attrs[i]);
    }
  }
  oar_attr_t shifted{};
  shifted.name = "diagonal";
  shifted.type = OAR_ATTR_TYPE_INT;
  shifted.value.i = diagonal == INT64_MIN ? diagonal : diagonal - 1;  // the defect
  attrs.push_back(shifted);
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  copy.num_attrs = attrs.size();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, strict_kernel); }

}  // namespace oar_defect
