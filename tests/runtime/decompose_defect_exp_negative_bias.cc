// A cpu plugin whose f32 exp is 1e-4 high for negative arguments (a vendor's
// fast exp: a truncated polynomial on the negative half-range), right
// elsewhere. Its own softmax, sigmoid and softmax_grad kernels do not call
// exp, so a native run of those operators passes; forced through their
// decompositions (exp is a primitive they are built from) they fail: the
// conformance suite certifies the decompositions only if it forces them
// (tests/runtime/decompose.cmake).
#include "tests/conformance/defects/variants/numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "exp" && is_code(kernel.dtypes[0], kDLFloat, 32);
}

oar_status_t biased_exp_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  return in_stream_order(call, [x, y] {
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = x.get(i);
      y.set(i, v < 0 ? std::exp(v) * (1 + 1e-4) : std::exp(v));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, biased_exp_kernel); }

}  // namespace oar_defect
