// The indexed gradients, computed in f32 and rounded once at the store. An
// index outside its range fails the stream (fail_index).
//
// OP 0 embedding_grad: one invocation per element (v, d) of dweight [V, D],
// summing dy[p, d] over the positions p whose index is v (Kahan-compensated).
// Parameters: 0 V, 1 D, 2 count, 3 dy offset, 4 index offset, 5 dweight offset.
//
// OP 1 cross_entropy_grad: one invocation per row of logits [N, C],
// dlogits = g (softmax(row) - onehot(target)); g = dloss[n] (mode 0), dloss
// (1) or dloss / N (2). Parameters: 0 N, 1 C, 2 mode, 3 dloss offset, 4
// target offset, 5 dlogits offset, 6 logits offset.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, g)
TENSOR(1, DTI, index)
TENSOR(2, DT, logits)
TENSOR(3, DT, y)

float nan_value() { return uintBitsToFloat(0x7fc00000u); }

void embedding_grad(uint i) {
  uint D = PU(1), count = PU(2);
  int V = P(0);
  int v = int(i / D);
  uint d = i % D;
  precise float s = 0.0, compensation = 0.0;
  for (uint p = 0u; p < count; ++p) {
    CAT(COMPUTE_, DTI) t = load_index(PU(4) + p);
    if (t < 0 || t >= V) fail_index(5u, int64_t(t), int64_t(V));
    if (t == v) {
      precise float term = load_g(PU(3) + p * D + d) - compensation;
      precise float next = s + term;
      compensation = (next - s) - term;
      s = next;
    }
  }
  store_y(PU(5) + i, s);
}

void cross_entropy_grad(uint n) {
  uint N = PU(0), C = PU(1);
  int mode = P(2);
  CAT(COMPUTE_, DTI) t = load_index(PU(4) + n);
  if (t < 0 || t >= int(C)) {
    fail_index(6u, int64_t(t), int64_t(C));
    return;
  }
  float g = load_g(PU(3) + (mode == 0 ? n : 0u));
  if (mode == 2) g /= float(N);
  uint base = PU(6) + n * C, dst = PU(5) + n * C;
  float m = uintBitsToFloat(0xff800000u);
  bool invalid = false;
  for (uint j = 0u; j < C; ++j) {
    float v = load_logits(base + j);
    if (isnan(v)) invalid = true;
    m = max(m, v);
  }
  // NaN, +inf or only -inf in the row: every position is NaN.
  if (invalid || isinf(m)) {
    for (uint j = 0u; j < C; ++j) store_y(dst + j, nan_value());
    return;
  }
  float s = 0.0;
  for (uint j = 0u; j < C; ++j) s += exp(load_logits(base + j) - m);
  for (uint j = 0u; j < C; ++j) {
    float p = exp(load_logits(base + j) - m) / s;
    store_y(dst + j, g * (p - (int(j) == int(t) ? 1.0 : 0.0)));
  }
}

void main() {
  uint n = OP == 0 ? PU(0) * PU(1) : PU(0);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    if (OP == 0) {
      embedding_grad(i);
    } else {
      cross_entropy_grad(i);
    }
  }
}
