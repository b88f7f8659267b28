// logsumexp of one float dtype DT (1 f16, 2 bf16, 3 f32): one invocation per
// output, over the reduced elements of contiguous x. Computed in f32: NaN if
// any element is NaN, the maximum if it is infinite (all -inf, or no element:
// -inf), else m + log(sum(exp(x - m))).
//
// Parameters: 0 outputs, 1 kept ndim, 2..9 kept shape, 10..17 kept strides,
// 18 reduced ndim, 19..26 reduced shape, 27..34 reduced strides, 35 reduced
// count, 36 x's element offset, 37 y's.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;  // unused: one operation

TENSOR(0, DT, x)
TENSOR(3, DT, y)

void main() {
  uint n = PU(0);
  int nk = P(1), nr = P(18);
  uint count = PU(35);
  for (uint o = gl_GlobalInvocationID.x; o < n; o += thread_count()) {
    uint base = PU(36) + uint(strided_offset(o, nk, 2, 10));
    float m = uintBitsToFloat(0xff800000u);  // -inf
    bool nan = false;
    for (uint r = 0u; r < count; ++r) {
      float v = load_x(base + uint(strided_offset(r, nr, 19, 27)));
      nan = nan || isnan(v);
      m = v > m ? v : m;
    }
    float result = m;
    if (nan) {
      result = uintBitsToFloat(0x7fc00000u);
    } else if (!isinf(m)) {
      float sum = 0.0;
      for (uint r = 0u; r < count; ++r) {
        sum += exp(load_x(base + uint(strided_offset(r, nr, 19, 27))) - m);
      }
      result = m + log(sum);
    }
    store_y(PU(37) + o, result);
  }
}
