// f32 sigmoid never returns for 13 x 31 = 403 elements (a loop over
// work-groups whose exit test assumes the size is a multiple of the group
// size). oar-conform must time that one test out, blame it, and go on.
#include <chrono>
#include <thread>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return kernel.op == "sigmoid" && all_dtypes(kernel, kDLFloat, 32);
}

oar_status_t hanging_sigmoid(const oar_kernel_call_t* call) {
  int64_t count = 1;
  const DLTensor& x = call->inputs[0];
  for (int d = 0; d < x.ndim; ++d) count *= x.shape[d];
  while (count == 13 * 31) std::this_thread::sleep_for(std::chrono::seconds(1));
  return call_real(call);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, hanging_sigmoid); }

}  // namespace oar_defect
