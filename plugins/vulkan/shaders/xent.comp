// cross_entropy's per-row losses over [N, C] logits and [N] targets, one
// invocation per row, stored as DTY (the output dtype for reduction "none",
// f32 scratch that reduce.comp sums for "sum" and "mean"). A target outside
// [0, C) fails the stream.
//
// Parameters: 0 N, 1 C, 2 logits offset, 3 target offset, 4 y offset.
#version 450
#include "common.glsl"

TENSOR(0, DT, logits)
TENSOR(1, DTI, target)
TENSOR(3, DTY, y)

float nan_value() { return uintBitsToFloat(0x7fc00000u); }

float row_loss(uint n) {
  uint C = PU(1);
  uint base = PU(2) + n * C;
  CAT(COMPUTE_, DTI) t = load_target(PU(3) + n);
  if (t < 0 || t >= int(C)) {
    fail_index(4u, int64_t(t), int64_t(C));
    return 0.0;
  }
  float m = uintBitsToFloat(0xff800000u);
  bool invalid = false;
  for (uint j = 0u; j < C; ++j) {
    float v = load_logits(base + j);
    if (isnan(v)) invalid = true;
    m = max(m, v);
  }
  if (invalid || isinf(m)) return nan_value();
  float s = 0.0;
  for (uint j = 0u; j < C; ++j) s += exp(load_logits(base + j) - m);
  return m + log(s) - load_logits(base + uint(t));
}

void main() {
  uint N = PU(0);
  for (uint n = gl_GlobalInvocationID.x; n < N; n += thread_count()) {
    store_y(PU(4) + n, row_loss(n));
  }
}
