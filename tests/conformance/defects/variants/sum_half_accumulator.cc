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
  std::vector<int64_t> axes = ints_attr(call, "axes");
  const int64_t rank = int64_t(x.shape.size());
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t a : axes) {
    if (rank > 0) reduced[size_t(a < 0 ? a + rank : a)] = true;
  }
  return in_stream_order(call, [x, y, reduced, mean, rank] {
    const int64_t outputs = y.numel();
    std::vector<double> acc(size_t(outputs), 0.0);
    int64_t count = 1;
    for (int64_t d = 0; d < rank; ++d) count *= reduced[size_t(d)] ? x.shape[size_t(d)] : 1;
    std::vector<int64_t> index(size_t(rank), 0);
    for (int64_t i = 0; i < x.numel(); ++i) {
      int64_t out = 0;
      for (int64_t d = 0; d < rank; ++d) {
        if (!reduced[size_t(d)]) out = out * x.shape[size_t(d)] + index[size_t(d)];
      }
      acc[size_t(out)] = narrow(x.dtype, acc[size_t(out)] + x.get(i));
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[size_t(d)] < x.shape[size_t(d)]) break;
        index[size_t(d)] = 0;
      }
    }
    for (int64_t o = 0; o < outputs; ++o) {
      y.set(o, mean ? acc[size_t(o)] / double(count) : acc[size_t(o)]);
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, half_sum_kernel); }

}  // namespace oar_defect
