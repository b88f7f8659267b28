// layer_norm, rms_norm and batch_norm ignore the eps attribute and use 1e-5,
// the usual default: right for every call that keeps it and for rows whose
// variance dwarfs eps; off by far more than any tolerance where eps matters.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "layer_norm" || kernel.op == "rms_norm" || kernel.op == "batch_norm";
}

oar_status_t fixed_eps_kernel(const oar_kernel_call_t* call) {
  std::vector<oar_attr_t> attrs;
  for (size_t i = 0; i < call->num_attrs; ++i) {
    if (std::strcmp(call->attrs[i].name, "eps") != 0) attrs.push_back(call->attrs[i]);
  }
  oar_attr_t eps{};
  eps.name = "eps";
  eps.type = OAR_ATTR_TYPE_FLOAT;
  eps.value.f = 1e-5;
  attrs.push_back(eps);
  oar_kernel_call_t copy = *call;
  copy.attrs = attrs.data();
  copy.num_attrs = attrs.size();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, fixed_eps_kernel); }

}  // namespace oar_defect
