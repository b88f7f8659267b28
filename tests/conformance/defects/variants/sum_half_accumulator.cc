// sum and mean of f16 and bf16 accumulate in the element type: every partial
// sum is rounded to f16/bf16. Right for short or mixed-sign sums (within the
// tolerance); a long sum of positive terms stops growing once the terms fall
// below half the accumulator's spacing.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return (kernel.op == "sum" || kernel.op == "mean") && is_half(kernel.dtypes[0]);
}

// Rounds |v| to the element type (to nearest even), as storing it would.
double narrow(const DLDataType& t, double v) {
  uint16_t bits = is_f16(t) ? float_to_f16(float(v), Narrowing::kNearestEven)
                            : float_to_bf16(float(v), Narrowing::kNearestEven);
  return is_f16(t) ? f16_to_float(bits) : bf16_to_float(bits);
}

oar_status_t half_sum_kernel(const oar_kernel_call_t* call) {
  const bool mean = real_kernel(call).op == "mean";
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  const std::vector<bool> reduced = reduced_dims(call, x);
  return in_stream_order(call, [x, y, reduced, mean] {
    running_sum(x, y, reduced, mean, [&x](double v) { return narrow(x.dtype, v); });
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, half_sum_kernel); }

}  // namespace oar_defect
