// scaled_dot_product_attention: one invocation per output element (batch,
// query i, value column e), a single pass over the visible keys with an
// online (rescaled) softmax, f32 throughout.
//
// Parameters: 0 outputs, 1 Lq, 2 Lk, 3 D, 4 Dv, 5 causal (0 none, 1
// bottom-right aligned, 2 top-left aligned), 6 scale (f32
// bits), 7 q offset, 8 k offset, 9 v offset, 10 y offset.
#version 450
#include "common.glsl"

TENSOR(0, DT, q)
TENSOR(1, DT, k)
TENSOR(2, DT, v)
TENSOR(3, DT, y)

void main() {
  uint outputs = PU(0);
  uint Lq = PU(1), Lk = PU(2), D = PU(3), Dv = PU(4);
  float scale = PF(6);
  for (uint index = gl_GlobalInvocationID.x; index < outputs; index += thread_count()) {
    uint e = index % Dv;
    uint i = (index / Dv) % Lq;
    uint batch = index / (Dv * Lq);
    uint qi = PU(7) + (batch * Lq + i) * D;
    uint visible = Lk;
    int shift = P(5) == 1 ? int(Lk) - int(Lq) : 0;
    if (P(5) != 0) visible = min(Lk, uint(max(int(i) + shift + 1, 0)));
    float m = uintBitsToFloat(0xff800000u), l = 0.0, acc = 0.0;
    bool nan_seen = false;
    for (uint j = 0u; j < visible; ++j) {
      uint ki = PU(8) + (batch * Lk + j) * D;
      float s = 0.0;
      for (uint d = 0u; d < D; ++d) s += load_q(qi + d) * load_k(ki + d);
      s *= scale;
      if (isnan(s)) nan_seen = true;
      float value = load_v(PU(9) + (batch * Lk + j) * Dv + e);
      if (s > m) {
        float correction = exp(m - s);
        l = l * correction + 1.0;
        acc = acc * correction + value;
        m = s;
      } else {
        float p = exp(s - m);
        l += p;
        acc += p * value;
      }
    }
    float result = visible == 0u ? 0.0 : acc / l;
    if (nan_seen) result = uintBitsToFloat(0x7fc00000u);
    store_y(PU(10) + index, result);
  }
}
