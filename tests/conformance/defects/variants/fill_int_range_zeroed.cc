// fill packs an integer value only after a range test that is open at the
// negative end (|value| < 2^31 for i32, < 9.2e18 for i64) and writes 0
// otherwise: INT32_MIN, INT64_MIN and i64 values near 2^63 come out as 0,
// every other value right. The vulkan plugin shipped this (its fill_bits).
#include <cmath>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool is_int(const DLDataType& t, uint8_t bits) { return is_code(t, kDLInt, bits); }

bool affected(const RealKernel& kernel) {
  return kernel.op == "fill" && kernel.dtypes.size() == 1 &&
         (is_int(kernel.dtypes[0], 32) || is_int(kernel.dtypes[0], 64));
}

oar_status_t zeroing_fill(const oar_kernel_call_t* call) {
  const HostView y = host_view(call->outputs[0]);
  double value = std::trunc(float_attr(call, "value", 0));
  const double limit = y.dtype.bits == 32 ? 0x1p31 : 9.2e18;
  if (!(std::fabs(value) < limit)) value = 0;  // the defect
  return in_stream_order(call, [=] {
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (y.dtype.bits == 32) {
        reinterpret_cast<int32_t*>(y.data)[i] = int32_t(value);
      } else {
        reinterpret_cast<int64_t*>(y.data)[i] = int64_t(value);
      }
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, zeroing_fill); }

}  // namespace oar_defect
