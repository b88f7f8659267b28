// f32 scatter applies the positions of index in reverse order, so that of
// repeated indices the first along the axis wins, not the last
// (docs/ops.md): right whenever a line's indices are distinct.
#include "layout_v2_scatter_host.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "scatter" && is_f32(kernel.dtypes[0]);
}

oar_status_t first_wins_kernel(const oar_kernel_call_t* call) {
  return host_scatter(call, ScatterMistake::kFirstWins);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, first_wins_kernel); }

}  // namespace oar_defect
