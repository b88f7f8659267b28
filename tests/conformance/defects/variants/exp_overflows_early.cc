// exp as 2^k * e^r (k = round(x / ln 2), |r| <= ln 2 / 2) with the scale 2^k
// built in the output's own format: where 2^k is past the largest exponent
// the result is inf although e^x is finite (f32: x in (88.37, 88.72]; f16: x
// in (10.74, 11.09]), and where 2^k is below the smallest normal it is zero
// (f16: subnormal results). Right everywhere else, the special values included.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "exp"; }

oar_status_t scaled_exp_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  const DLDataType t = x.dtype;
  const int max_exponent = is_f16(t) ? 15 : t.bits == 64 ? 1023 : 127;
  const int min_exponent = is_f16(t) ? -14 : t.bits == 64 ? -1022 : -126;
  return in_stream_order(call, [=] {
    for (int64_t i = 0; i < x.numel(); ++i) {
      const double v = x.get(i);
      if (std::isnan(v) || std::isinf(v)) {
        y.set(i, std::exp(v));
        continue;
      }
      const double k = std::nearbyint(v / std::log(2.0));
      const double r = v - k * std::log(2.0);
      const double scale = k > max_exponent   ? HUGE_VAL
                           : k < min_exponent ? 0.0
                                              : std::ldexp(1.0, int(k));
      y.set(i, scale * std::exp(r));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, scaled_exp_kernel); }

}  // namespace oar_defect
