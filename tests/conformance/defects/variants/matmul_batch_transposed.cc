// matmul reads a transposed operand from its first matrix whatever the batch
// index: the transposed path was written for 2-D operands. Right for every
// untransposed call and for 2-D transposed ones; batched calls with a
// transpose use batch 0 of the transposed side throughout.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "matmul"; }

oar_status_t batch_blind_kernel(const oar_kernel_call_t* call) {
  const HostView a = host_view(call->inputs[0]), b = host_view(call->inputs[1]);
  const HostView y = host_view(call->outputs[0]);
  const bool ta = bool_attr(call, "transpose_a", false), tb = bool_attr(call, "transpose_b", false);
  return in_stream_order(call, [=] {
    const size_t ra = a.shape.size(), rb = b.shape.size(), ry = y.shape.size();
    const int64_t m = y.shape[ry - 2], n = y.shape[ry - 1];
    const int64_t k = ta ? a.shape[ra - 2] : a.shape[ra - 1];
    const int64_t batches = m * n == 0 ? 0 : y.numel() / (m * n);
    for (int64_t t = 0; t < batches; ++t) {
      // The batch index of each operand under NumPy broadcasting.
      int64_t rest = t, ia = 0, ib = 0, sa = 1, sb = 1;
      for (size_t d = ry - 2; d-- > 0;) {
        const int64_t extent = y.shape[d], i = rest % extent;
        rest /= extent;
        const int64_t da = int64_t(d) - int64_t(ry - ra), db = int64_t(d) - int64_t(ry - rb);
        if (da >= 0) {
          if (a.shape[size_t(da)] != 1) ia += i * sa;
          sa *= a.shape[size_t(da)];
        }
        if (db >= 0) {
          if (b.shape[size_t(db)] != 1) ib += i * sb;
          sb *= b.shape[size_t(db)];
        }
      }
      if (ta) ia = 0;  // the defect
      if (tb) ib = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double s = 0;
          for (int64_t p = 0; p < k; ++p) {
            s += a.get(ia * m * k + (ta ? p * m + i : i * k + p)) *
                 b.get(ib * k * n + (tb ? j * k + p : p * n + j));
          }
          y.set((t * m + i) * n + j, s);
        }
      }
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, batch_blind_kernel); }

}  // namespace oar_defect
