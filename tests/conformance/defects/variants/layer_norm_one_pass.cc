// layer_norm takes the variance in one pass, E[x^2] - E[x]^2, with f32
// accumulators (f64 for f64): right for centred rows, catastrophically wrong
// (even negative) for rows with a large common offset.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "layer_norm"; }

template <typename C>
void run(HostView x, HostView w, HostView b, HostView y, double eps) {
  const int64_t d = x.shape.empty() ? 1 : x.shape.back();
  const int64_t rows = d == 0 ? 0 : x.numel() / d;
  for (int64_t r = 0; r < rows; ++r) {
    C sum = 0, squares = 0;
    for (int64_t j = 0; j < d; ++j) {
      const C v = C(x.get(r * d + j));
      sum += v;
      squares += v * v;
    }
    const C mean = sum / C(d);
    const C var = squares / C(d) - mean * mean;
    const C inv = C(1) / std::sqrt(var + C(eps));
    for (int64_t j = 0; j < d; ++j) {
      y.set(r * d + j, (C(x.get(r * d + j)) - mean) * inv * C(w.get(j)) + C(b.get(j)));
    }
  }
}

oar_status_t one_pass_kernel(const oar_kernel_call_t* call) {
  const HostView x = host_view(call->inputs[0]), w = host_view(call->inputs[1]);
  const HostView b = host_view(call->inputs[2]), y = host_view(call->outputs[0]);
  const double eps = float_attr(call, "eps", 1e-5);
  const bool wide = x.dtype.bits == 64;
  return in_stream_order(
      call, [=] { wide ? run<double>(x, w, b, y, eps) : run<float>(x, w, b, y, eps); });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, one_pass_kernel); }

}  // namespace oar_defect
