// sum and mean of f32 add every term into one running f32 accumulator, in
// order: right for short or mixed-sign sums, but over millions of terms of
// one sign its error grows past the accumulate tolerance (docs/ops.md:
// the bound holds whatever the number of terms).
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return (kernel.op == "sum" || kernel.op == "mean") && is_code(kernel.dtypes[0], kDLFloat, 32);
}

oar_status_t running_f32_kernel(const oar_kernel_call_t* call) {
  const bool mean = real_kernel(call).op == "mean";
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  const std::vector<bool> reduced = reduced_dims(call, x);
  return in_stream_order(call, [x, y, reduced, mean] {
    running_sum(x, y, reduced, mean, [](double v) { return double(float(v)); });
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, running_f32_kernel); }

}  // namespace oar_defect
