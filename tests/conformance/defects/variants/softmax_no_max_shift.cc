// softmax, log_softmax and cross_entropy exponentiate the logits as they are,
// without subtracting the row's maximum: right for logits of a few units,
// inf / inf = NaN once e^x overflows (x > 88 in f32) and 0 / 0 once it
// underflows. They compute in f32 (f64 for f64), as the real kernels might.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "softmax" || kernel.op == "log_softmax" || kernel.op == "cross_entropy";
}

template <typename C>
void run(const std::string& op, HostView x, HostView y, HostView target, int64_t axis,
         const std::string& reduction) {
  const int64_t rank = int64_t(x.shape.size());
  if (axis < 0) axis += rank;
  const int64_t n = rank == 0 ? 1 : x.shape[size_t(axis)];
  int64_t inner = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[size_t(d)];
  const int64_t lines = n == 0 ? 0 : x.numel() / n;
  C total = 0;
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t base = line / inner * n * inner + line % inner;
    C sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(C(x.get(base + j * inner)));
    if (op == "cross_entropy") {
      const C loss = std::log(sum) - C(x.get(base + target.get_index(line)));
      if (reduction == "none") y.set(line, loss);
      total += loss;
      continue;
    }
    for (int64_t j = 0; j < n; ++j) {
      const C v = C(x.get(base + j * inner));
      y.set(base + j * inner, op == "softmax" ? std::exp(v) / sum : v - std::log(sum));
    }
  }
  if (reduction == "sum") y.set(0, total);
  if (reduction == "mean") y.set(0, total / C(lines));
}

oar_status_t naive_kernel(const oar_kernel_call_t* call) {
  const std::string op = real_kernel(call).op;
  const HostView x = host_view(call->inputs[0]), y = host_view(call->outputs[0]);
  const HostView target = call->num_inputs > 1 ? host_view(call->inputs[1]) : HostView{};
  const int64_t axis = op == "cross_entropy" ? 1 : int_attr(call, "axis", -1);
  const std::string reduction = op == "cross_entropy" ? string_attr(call, "reduction", "mean") : "";
  const bool wide = x.dtype.bits == 64;
  return in_stream_order(call, [=] {
    wide ? run<double>(op, x, y, target, axis, reduction)
         : run<float>(op, x, y, target, axis, reduction);
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, naive_kernel); }

}  // namespace oar_defect
