// grad_norm and clip_grad_norm for gradients of dtype DT (1 f16, 2 bf16, 3
// f32), in f32. OP 0: one partial per invocation over |chunk| elements of x;
// 1: one partial per invocation over |chunk| partials; 2: the norm from at
// most |chunk| partials (one invocation); 3: clip_grad_norm. kind: 0 the sum
// of |x| (norm_type 1), 1 the sum of x^2 (2), 2 the largest |x| (inf), a NaN
// winning.
//
// Parameters for 0..2: 0 invocations, 1 n (elements or partials), 2 chunk,
// 3 x offset, 4 partials in offset, 5 partials out offset, 6 kind, 7 y offset.
// For 3: 0 n, 1 grad offset, 2 total_norm offset, 3 y offset, 4 max_norm
// (f32 bits), 5 eps (f32 bits).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, x)
TENSOR(1, 3, partials_in)
TENSOR(2, 3, partials_out)
TENSOR(3, 3, norm)
TENSOR(4, DT, y)

float merge(float s, float t, int kind) {
  if (kind != 2) return s + t;
  return (isnan(s) || isnan(t)) ? uintBitsToFloat(0x7fc00000u) : max(s, t);
}

float term(float v, int kind) {
  float a = abs(v);
  return kind == 1 ? a * a : a;
}

void main() {
  uint count = PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < count; i += thread_count()) {
    if (OP == 3) {
      float coefficient = PF(4) / (load_norm(PU(2)) + PF(5));
      float scale = isnan(coefficient) ? coefficient : min(1.0, coefficient);
      store_y(PU(3) + i, load_x(PU(1) + i) * scale);
      continue;
    }
    int kind = P(6);
    uint n = PU(1), chunk = PU(2);
    uint begin = i * chunk;
    uint end = min(n, begin + chunk);
    float s = 0.0;
    for (uint j = begin; j < end; ++j) {
      s = merge(s, OP == 0 ? term(load_x(PU(3) + j), kind) : load_partials_in(PU(4) + j), kind);
    }
    if (OP == 2) {
      store_norm(PU(7), kind == 1 ? sqrt(s) : s);
    } else {
      store_partials_out(PU(5) + i, s);
    }
  }
}
