// f32 mul/add results are off by a relative 1e-3 on every 7th element of
// output 0 (applied in stream order, after the real kernel).
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool affected(const RealKernel& kernel) {
  return (kernel.op == "mul" || kernel.op == "add") && all_dtypes(kernel, kDLFloat, 32);
}

// Output 0 as the stream-ordered callback sees it: the call record dies with
// the call, so its address, shape and strides are copied.
struct Perturbation {
  char* base;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void perturb(void* user_data, oar_status_t status) {
  auto* p = static_cast<Perturbation*>(user_data);
  if (status == OAR_STATUS_OK) {
    size_t ndim = p->shape.size();
    int64_t count = 1;
    for (int64_t extent : p->shape) count *= extent;
    std::vector<int64_t> index(ndim, 0);
    for (int64_t linear = 0; linear < count; ++linear) {
      if (linear % 7 == 0) {
        int64_t offset = 0;
        for (size_t d = 0; d < ndim; ++d) offset += index[d] * p->strides[d];
        float* element = reinterpret_cast<float*>(p->base) + offset;
        *element *= 1.0f + 1e-3f;
      }
      for (size_t d = ndim; d-- > 0;) {  // row-major increment
        if (++index[d] < p->shape[d]) break;
        index[d] = 0;
      }
    }
  }
  delete p;
}

oar_status_t off_kernel(const oar_kernel_call_t* call) {
  oar_status_t status = call_real(call);
  if (status != OAR_STATUS_OK || call->num_outputs == 0) return status;
  const DLTensor& out = call->outputs[0];
  auto* p = new Perturbation;
  // cpu memory handles are host pointers.
  p->base = static_cast<char*>(out.data) + out.byte_offset;
  p->shape.assign(out.shape, out.shape + out.ndim);
  if (out.strides != nullptr) {
    p->strides.assign(out.strides, out.strides + out.ndim);
  } else {
    p->strides.assign(out.ndim, 1);
    for (int d = out.ndim - 1; d > 0; --d) p->strides[d - 1] = p->strides[d] * out.shape[d];
  }
  oar_status_t queued = real->stream_add_host_callback(call->stream, perturb, p);
  if (queued != OAR_STATUS_OK) delete p;
  return queued;
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, affected, off_kernel); }

}  // namespace oar_defect
