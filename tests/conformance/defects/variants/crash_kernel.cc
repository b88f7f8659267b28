// f32 exp crashes (SIGSEGV) on rank-4 inputs: its index table has three
// entries and the fourth dimension reads a null pointer. oar-conform must
// report that test as crashed and run the rest of the group.
#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "exp" && all_dtypes(kernel, kDLFloat, 32);
}

// volatile: the compiler may not assume the table is null and drop the read.
const int64_t* volatile g_index_tables[3] = {};

oar_status_t crashing_exp(const oar_kernel_call_t* call) {
  const DLTensor& x = call->inputs[0];
  if (x.ndim == 4) {
    volatile const int64_t* table = g_index_tables[x.ndim - 2];
    if (table[x.ndim] == 42) return OAR_STATUS_INTERNAL;  // reads through NULL
  }
  return call_real(call);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, crashing_exp); }

}  // namespace oar_defect
