// Indexed kernels read i64 indices as 32-bit ones: only the low 32 bits of
// each index count (as a GPU kernel that loads int64 indices into int32
// registers would), so an index of 2^32 + 1 selects row 1 instead of failing.
// Modelled on the cpu plugin by truncating the index tensor in stream order
// just before the real kernel runs.
#include <cstdint>
#include <vector>

#include "../shim.h"

namespace oar_defect {
namespace {

bool indexed(const RealKernel& kernel) {
  return kernel.op == "index_select" || kernel.op == "gather" || kernel.op == "embedding" ||
         kernel.op == "cross_entropy";
}

struct Indices {
  int64_t* data;
  int64_t count;
};

void truncate_indices(void* user_data, oar_status_t status) {
  auto* indices = static_cast<Indices*>(user_data);
  if (status == OAR_STATUS_OK) {
    for (int64_t i = 0; i < indices->count; ++i) {
      indices->data[i] = int64_t(int32_t(uint32_t(uint64_t(indices->data[i]))));
    }
  }
  delete indices;
}

oar_status_t kernel(const oar_kernel_call_t* call) {
  const RealKernel& real_k = real_kernel(call);
  for (size_t i = 0; i < call->num_inputs; ++i) {
    const DLTensor& t = call->inputs[i];
    const DLDataType& type = real_k.dtypes[i];
    if (type.code != kDLInt || type.bits != 64) continue;
    int64_t count = 1;
    for (int d = 0; d < t.ndim; ++d) count *= t.shape[d];
    // cpu memory handles are host pointers; index inputs are contiguous.
    auto* indices =
        new Indices{reinterpret_cast<int64_t*>(static_cast<char*>(t.data) + t.byte_offset), count};
    oar_status_t queued = real->stream_add_host_callback(call->stream, truncate_indices, indices);
    if (queued != OAR_STATUS_OK) {
      delete indices;
      return queued;
    }
  }
  return call_real(call);
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, indexed, kernel); }

}  // namespace oar_defect
