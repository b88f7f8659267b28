// add on i8, u8 and i16 saturates instead of wrapping: the result of a
// saturating SIMD add (paddsb / vqadd), the quantized-arithmetic habit, where
// docs/ops.md promises two's complement wrap-around (127 + 1 == -128 in i8).
// Modelled on the cpu plugin by clamping, in stream order after the real
// kernel, every output whose inputs have the output's shape.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "kernel_memory.h"

namespace oar_defect {
namespace {

bool narrow_add(const RealKernel& kernel) {
  if (kernel.op != "add") return false;
  const DLDataType t = kernel.dtypes[0];
  return (t.code == kDLInt && (t.bits == 8 || t.bits == 16)) || (t.code == kDLUInt && t.bits == 8);
}

struct Saturate {
  const char* a;
  const char* b;
  char* y;
  int64_t count;
  DLDataType dtype;
};

int64_t load(const char* p, int64_t i, DLDataType t) {
  if (t.bits == 16) {
    int16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return v;
  }
  return t.code == kDLUInt ? int64_t(uint8_t(p[i])) : int64_t(int8_t(p[i]));
}

void saturate(void* user_data, oar_status_t status) {
  auto* s = static_cast<Saturate*>(user_data);
  if (status == OAR_STATUS_OK) {
    const int64_t lo = s->dtype.code == kDLUInt ? 0 : -(int64_t(1) << (s->dtype.bits - 1));
    const int64_t hi = s->dtype.code == kDLUInt ? 255 : (int64_t(1) << (s->dtype.bits - 1)) - 1;
    for (int64_t i = 0; i < s->count; ++i) {
      const int64_t v = std::clamp(load(s->a, i, s->dtype) + load(s->b, i, s->dtype), lo, hi);
      if (s->dtype.bits == 16) {
        const int16_t w = int16_t(v);
        std::memcpy(s->y + 2 * i, &w, 2);
      } else {
        s->y[i] = char(uint8_t(uint64_t(v)));
      }
    }
  }
  delete s;
}

oar_status_t kernel(const oar_kernel_call_t* call) {
  oar_status_t status = call_real(call);
  if (status != OAR_STATUS_OK) return status;
  const DLTensor &a = call->inputs[0], &b = call->inputs[1], &y = call->outputs[0];
  if (numel(a) != numel(y) || numel(b) != numel(y) || !contiguous(a) || !contiguous(b)) {
    return status;  // broadcast: left correct
  }
  auto* s = new Saturate{host_address(a), host_address(b), host_address(y), numel(y), y.dtype};
  oar_status_t queued = real->stream_add_host_callback(call->stream, saturate, s);
  if (queued != OAR_STATUS_OK) delete s;
  return queued;
}

}  // namespace

void install(oar_plugin_api_t& table) { wrap_kernels(table, narrow_add, kernel); }

}  // namespace oar_defect
