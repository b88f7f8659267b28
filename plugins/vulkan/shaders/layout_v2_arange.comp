// arange: y[i] = start + i * step, one fma in f32 rounded once when stored
// (f16, bf16, f32); integers in wrapping 64-bit arithmetic from the host's
// integer start and step.
//
// Parameters: 0 n, 1 y offset, 2 start (f32 bits), 3 step (f32 bits),
// 4 and 5 integer start (low, high words), 6 and 7 integer step.
#version 450
#include "common.glsl"

TENSOR(3, DT, y)

void main() {
  uint n = PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
#if DT == 4 || DT == 5
    uint64_t start = uint64_t(PU(4)) | (uint64_t(PU(5)) << 32);
    uint64_t step = uint64_t(PU(6)) | (uint64_t(PU(7)) << 32);
    store_y(PU(1) + i, CAT(COMPUTE_, DT)(int64_t(start + uint64_t(i) * step)));
#else
    store_y(PU(1) + i, fma(float(i), PF(3), PF(2)));
#endif
  }
}
