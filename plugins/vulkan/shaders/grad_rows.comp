// OP 2, rotary_embedding_grad (one invocation per pair): the transposed
// rotation, dx1 = dy1 c + dy2 s, dx2 = dy2 c - dy1 s. Parameters: 0 pairs,
// 1 S, 2 half of D, 3 interleaved, 4 dy offset, 5 cos, 6 sin, 7 dx offset.
//
// softmax_grad (OP 0: dx = y (dy - sum(dy y))) and log_softmax_grad (OP 1:
// dx = dy - exp(y) sum(dy)) along an axis, one invocation per row of L
// elements |inner| apart; sums in f32 with Kahan's compensation (a plain f32
// running sum over rows of thousands exceeds the accumulate tolerance), one
// rounding at the store.
//
// Parameters: 0 rows, 1 inner, 2 L, 3 dy offset, 4 y offset, 5 dx offset.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, dy)
TENSOR(1, DT, y)
TENSOR(3, DT, dx)
TENSOR(4, DT, cs)
TENSOR(5, DT, sn)

void rotary_grad(uint i) {
  uint S = PU(1), half_d = PU(2);
  bool interleaved = P(3) != 0;
  uint row = i / half_d, pair = i % half_d;
  uint s = row % S;
  uint base = row * 2u * half_d;
  uint first = interleaved ? base + 2u * pair : base + pair;
  uint second = interleaved ? first + 1u : first + half_d;
  float g1 = load_dy(PU(4) + first), g2 = load_dy(PU(4) + second);
  float c = load_cs(PU(5) + s * half_d + pair), sv = load_sn(PU(6) + s * half_d + pair);
  store_dx(PU(7) + first, g1 * c + g2 * sv);
  store_dx(PU(7) + second, g2 * c - g1 * sv);
}

void main() {
  if (OP == 2) {
    for (uint i = gl_GlobalInvocationID.x; i < PU(0); i += thread_count()) rotary_grad(i);
    return;
  }
  uint rows = PU(0), inner = PU(1), L = PU(2);
  for (uint row = gl_GlobalInvocationID.x; row < rows; row += thread_count()) {
    uint start = (row / inner) * L * inner + row % inner;
    precise float s = 0.0, compensation = 0.0;
    for (uint j = 0u; j < L; ++j) {
      uint at = start + j * inner;
      float g = load_dy(PU(3) + at);
      precise float term = (OP == 1 ? g : g * load_y(PU(4) + at)) - compensation;
      precise float next = s + term;
      compensation = (next - s) - term;
      s = next;
    }
    for (uint j = 0u; j < L; ++j) {
      uint at = start + j * inner;
      float g = load_dy(PU(3) + at), v = load_y(PU(4) + at);
      store_dx(PU(5) + at, OP == 1 ? g - exp(v) * s : v * (g - s));
    }
  }
}
