// f32 scatter_add written as y[q] = x[q] + src[p] per position (each
// work-item reads the input, not the running sum, as a parallel kernel
// without atomics does): right whenever no index repeats within a line.
#include "layout_v2_scatter_host.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "scatter_add" && is_f32(kernel.dtypes[0]);
}

oar_status_t race_kernel(const oar_kernel_call_t* call) {
  return host_scatter(call, ScatterMistake::kAddToOriginal);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, race_kernel); }

}  // namespace oar_defect
