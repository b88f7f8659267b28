// max_pool2d_grad picks each window's maximum with >= instead of >: a tie
// hands the gradient to the LAST maximum in row-major order, not the first
// (the forward value is the same either way, so only a tie test sees it).
#include <algorithm>
#include <cmath>

#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "max_pool2d_grad"; }

void run(HostView dy, HostView x, HostView dx, std::vector<int64_t> k, std::vector<int64_t> s,
         std::vector<int64_t> p) {
  const int64_t planes = x.shape[0] * x.shape[1], H = x.shape[2], W = x.shape[3];
  const int64_t OH = dy.shape[2], OW = dy.shape[3];
  std::vector<double> acc(size_t(x.numel()), 0.0);
  for (int64_t q = 0; q < planes; ++q) {
    for (int64_t oh = 0; oh < OH; ++oh) {
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t best = -1;
        double best_value = 0;
        for (int64_t h = std::max<int64_t>(oh * s[0] - p[0], 0);
             h < std::min(oh * s[0] - p[0] + k[0], H); ++h) {
          for (int64_t w = std::max<int64_t>(ow * s[1] - p[1], 0);
               w < std::min(ow * s[1] - p[1] + k[1], W); ++w) {
            const double v = x.get((q * H + h) * W + w);
            if (best < 0 || v >= best_value || std::isnan(v)) {
              best = (q * H + h) * W + w;
              best_value = v;
            }
          }
        }
        acc[size_t(best)] += dy.get((q * OH + oh) * OW + ow);
      }
    }
  }
  for (int64_t i = 0; i < x.numel(); ++i) dx.set(i, acc[size_t(i)]);
}

std::vector<int64_t> pair(std::vector<int64_t> v, std::vector<int64_t> fallback) {
  if (v.empty()) v = fallback;
  if (v.size() == 1) v.push_back(v[0]);
  return v;
}

oar_status_t last_tie_kernel(const oar_kernel_call_t* call) {
  const HostView dy = host_view(call->inputs[0]), x = host_view(call->inputs[1]);
  const HostView dx = host_view(call->outputs[0]);
  const auto k = pair(ints_attr(call, "kernel_size"), {});
  const auto s = pair(ints_attr(call, "stride"), k);
  const auto p = pair(ints_attr(call, "padding"), {0, 0});
  return in_stream_order(call, [=] { run(dy, x, dx, k, s, p); });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, last_tie_kernel); }

}  // namespace oar_defect
