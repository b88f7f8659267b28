// The reductions (sum, mean, max, min, prod, argmax, argmin) stage their
// inputs when they are dispatched: a host copy on the calling thread into
// staging memory (as a plugin that maps its buffers at launch does), then the
// reduction of the staged copy in stream order. Outputs are written in order;
// the inputs are read too early, before the work queued ahead of the kernel.
#include <string>
#include <vector>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  for (const char* op : {"sum", "mean", "max", "min", "prod", "argmax", "argmin"}) {
    if (kernel.op == op) return true;
  }
  return false;
}

oar_status_t staged_kernel(const oar_kernel_call_t* call) {
  std::vector<DLTensor> inputs(call->inputs, call->inputs + call->num_inputs);
  auto* staging = new std::vector<oar_memory_t>;
  for (DLTensor& input : inputs) {
    const uint64_t bytes = span_bytes(input);
    oar_memory_t memory = nullptr;
    oar_status_t status =
        real->memory_allocate(call->device, bytes, OAR_MEMORY_KIND_DEVICE, &memory);
    if (status != OAR_STATUS_OK) return status;
    staging->push_back(memory);
    std::memcpy(memory, host_address(input), bytes);  // the defect: now, not in stream order
    input.data = memory;
    input.byte_offset = 0;
  }
  oar_kernel_call_t copy = *call;
  copy.inputs = inputs.data();
  oar_status_t status = call_real(call, copy);
  oar_device_t device = call->device;
  oar_status_t queued = in_stream_order(call->stream, [device, staging](oar_status_t) {
    for (oar_memory_t memory : *staging) real->memory_free(device, memory);
    delete staging;
  });
  return status != OAR_STATUS_OK ? status : queued;
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, staged_kernel); }

}  // namespace oar_defect
