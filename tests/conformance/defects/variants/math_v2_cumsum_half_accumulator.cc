// cumsum on f16 with a running f16 accumulator (each partial sum rounded to
// f16 before the next term is added): right on short rows, but once the sum
// is large its spacing swallows small terms, and long rows of one sign fall
// short of the accumulate tolerance. Calls along another axis, exclusive or
// reversed go to the real kernel.
#include <cstdint>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "cumsum" && all_dtypes(kernel, kDLFloat, 16);
}

oar_status_t half_accumulator_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  const int64_t axis = int_attr(call, "axis", -1);
  if (x.shape.empty() || (axis != -1 && axis != int64_t(x.shape.size()) - 1) ||
      bool_attr(call, "exclusive", false) || bool_attr(call, "reverse", false)) {
    return call_real(call);
  }
  return in_stream_order(call, [x, y] {
    const int64_t len = x.shape.back();
    for (int64_t base = 0; base < x.numel(); base += len) {
      float acc = 0;
      for (int64_t k = 0; k < len; ++k) {
        acc = f16_to_float(float_to_f16(acc + float(x.get(base + k)), Narrowing::kNearestEven));
        y.set(base + k, acc);
      }
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, half_accumulator_kernel); }

}  // namespace oar_defect
