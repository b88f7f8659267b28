// Every kernel writes its first output into one staging buffer of the plugin,
// then copies it out in stream order (memory_copy_d2d): correct on one
// stream, but two streams at once overwrite each other's staged results.
#include <mutex>
#include <vector>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

constexpr uint64_t kStagingBytes = uint64_t(64) << 20;
std::once_flag g_once;
oar_memory_t g_staging = nullptr;  // the defect: one for all streams

bool affected(const RealKernel& kernel) { return kernel.num_outputs > 0; }

oar_status_t staged_kernel(const oar_kernel_call_t* call) {
  std::call_once(g_once, [call] {
    real->memory_allocate(call->device, kStagingBytes, OAR_MEMORY_KIND_DEVICE, &g_staging);
  });
  const DLTensor& out = call->outputs[0];
  const uint64_t bytes = uint64_t(numel(out)) * element_size(out);
  if (g_staging == nullptr || !contiguous(out) || bytes == 0 || bytes > kStagingBytes) {
    return call_real(call);
  }
  std::vector<DLTensor> outputs(call->outputs, call->outputs + call->num_outputs);
  outputs[0].data = g_staging;
  outputs[0].byte_offset = 0;
  oar_kernel_call_t copy = *call;
  copy.outputs = outputs.data();
  oar_status_t status = call_real(call, copy);
  if (status != OAR_STATUS_OK) return status;
  return real->memory_copy_d2d(call->stream, static_cast<oar_memory_t>(out.data), out.byte_offset,
                               g_staging, 0, bytes);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, staged_kernel); }

}  // namespace oar_defect
