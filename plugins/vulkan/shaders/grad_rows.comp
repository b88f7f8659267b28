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

void main() {
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
