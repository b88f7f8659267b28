// matmul packs its second operand into one workspace of the plugin (a d2d
// copy in stream order) and multiplies from there: correct on one stream, but
// two streams at once overwrite each other's packed operand.
#include <mutex>
#include <vector>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

constexpr uint64_t kWorkspaceBytes = uint64_t(64) << 20;
std::once_flag g_once;
oar_memory_t g_workspace = nullptr;  // the defect: one for all streams

bool affected(const RealKernel& kernel) { return kernel.op == "matmul"; }

oar_status_t packing_kernel(const oar_kernel_call_t* call) {
  std::call_once(g_once, [call] {
    real->memory_allocate(call->device, kWorkspaceBytes, OAR_MEMORY_KIND_DEVICE, &g_workspace);
  });
  const DLTensor& b = call->inputs[1];
  const uint64_t bytes = uint64_t(numel(b)) * element_size(b);
  if (g_workspace == nullptr || !contiguous(b) || bytes == 0 || bytes > kWorkspaceBytes) {
    return call_real(call);
  }
  oar_status_t status = real->memory_copy_d2d(
      call->stream, g_workspace, 0, static_cast<oar_memory_t>(b.data), b.byte_offset, bytes);
  if (status != OAR_STATUS_OK) return status;
  std::vector<DLTensor> inputs(call->inputs, call->inputs + call->num_inputs);
  inputs[1].data = g_workspace;
  inputs[1].byte_offset = 0;
  oar_kernel_call_t copy = *call;
  copy.inputs = inputs.data();
  return call_real(call, copy);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, packing_kernel); }

}  // namespace oar_defect
