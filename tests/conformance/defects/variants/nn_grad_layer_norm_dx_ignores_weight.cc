// layer_norm_grad's dx treats the weight as 1 (g = dy instead of dy * weight),
// a slip of a kernel first written for an affine-free norm; dweight and dbias
// are right, and so is dx wherever the weight is 1.
#include <cmath>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "layer_norm_grad"; }

oar_status_t no_weight_kernel(const oar_kernel_call_t* call) {
  const oar_status_t status = call_real(call);
  if (status != OAR_STATUS_OK) return status;
  const HostView dy = host_view(call->inputs[0]), x = host_view(call->inputs[1]);
  const HostView dx = host_view(call->outputs[0]);
  const double eps = float_attr(call, "eps", 1e-5);
  return in_stream_order(call, [=] {
    const int64_t d = x.shape.back();
    const int64_t rows = d == 0 ? 0 : x.numel() / d;
    for (int64_t r = 0; r < rows; ++r) {
      double mean = 0, var = 0, mean_g = 0, mean_gx = 0;
      for (int64_t j = 0; j < d; ++j) mean += x.get(r * d + j) / double(d);
      for (int64_t j = 0; j < d; ++j) var += std::pow(x.get(r * d + j) - mean, 2) / double(d);
      const double rstd = 1 / std::sqrt(var + eps);
      for (int64_t j = 0; j < d; ++j) {
        mean_g += dy.get(r * d + j) / double(d);
        mean_gx += dy.get(r * d + j) * (x.get(r * d + j) - mean) * rstd / double(d);
      }
      for (int64_t j = 0; j < d; ++j) {
        const double xhat = (x.get(r * d + j) - mean) * rstd;
        dx.set(r * d + j, rstd * (dy.get(r * d + j) - mean_g - xhat * mean_gx));
      }
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, no_weight_kernel); }

}  // namespace oar_defect
