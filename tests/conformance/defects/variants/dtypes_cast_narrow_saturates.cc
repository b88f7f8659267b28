// cast from i32 to i8, u8 or i16 saturates (300 -> 127) instead of keeping
// the low bits (300 -> 44): a vendor that reuses its float -> int8
// quantization path (which clamps) for integer casts. docs/ops.md: int ->
// int is the value modulo 2^bits. Modelled on the cpu plugin by clamping, in
// stream order after the real kernel, from the i32 input.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool narrow(const DLDataType& t) {
  return (t.code == kDLInt && (t.bits == 8 || t.bits == 16)) || (t.code == kDLUInt && t.bits == 8);
}

bool i32_to_narrow(const RealKernel& kernel) {
  return kernel.op == "cast" && kernel.dtypes[0].code == kDLInt && kernel.dtypes[0].bits == 32 &&
         narrow(kernel.dtypes[1]);
}

struct Clamp {
  const int32_t* x;
  char* y;
  int64_t count;
  DLDataType to;
};

void clamp(void* user_data, oar_status_t status) {
  auto* c = static_cast<Clamp*>(user_data);
  if (status == OAR_STATUS_OK) {
    const int64_t lo = c->to.code == kDLUInt ? 0 : -(int64_t(1) << (c->to.bits - 1));
    const int64_t hi = c->to.code == kDLUInt ? 255 : (int64_t(1) << (c->to.bits - 1)) - 1;
    for (int64_t i = 0; i < c->count; ++i) {
      const int64_t v = std::clamp<int64_t>(c->x[i], lo, hi);
      if (c->to.bits == 16) {
        const int16_t w = int16_t(v);
        std::memcpy(c->y + 2 * i, &w, 2);
      } else {
        c->y[i] = char(uint8_t(uint64_t(v)));
      }
    }
  }
  delete c;
}

oar_status_t kernel(const oar_kernel_call_t* call) {
  oar_status_t status = call_real(call);
  if (status != OAR_STATUS_OK) return status;
  const DLTensor &x = call->inputs[0], &y = call->outputs[0];
  auto* c = new Clamp{reinterpret_cast<const int32_t*>(host_address(x)), host_address(y), numel(y),
                      y.dtype};
  oar_status_t queued = real->stream_add_host_callback(call->stream, clamp, c);
  if (queued != OAR_STATUS_OK) delete c;
  return queued;
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, i32_to_narrow, kernel); }

}  // namespace oar_defect
