// embedding_grad scatters instead of scatter-adding: each dy row is stored
// over dweight[index[p]], so of repeated indices the last one wins. Right
// whenever no index repeats (a batch of distinct tokens), wrong for every
// real batch.
#include "numerics_util.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) { return kernel.op == "embedding_grad"; }

oar_status_t overwriting_kernel(const oar_kernel_call_t* call) {
  const HostView dy = host_view(call->inputs[0]), index = host_view(call->inputs[1]);
  const HostView dw = host_view(call->outputs[0]);
  return in_stream_order(call, [=] {
    if (dw.numel() == 0) return;
    const int64_t rows = dw.shape[0], width = dw.shape[1];
    for (int64_t i = 0; i < rows * width; ++i) dw.set(i, 0.0);
    for (int64_t p = 0; p < index.numel(); ++p) {
      const int64_t v = index.get_index(p);
      if (v < 0 || v >= rows) continue;
      for (int64_t d = 0; d < width; ++d) dw.set(v * width + d, dy.get(p * width + d));
    }
  });
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, overwriting_kernel); }

}  // namespace oar_defect
