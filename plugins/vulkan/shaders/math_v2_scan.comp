// cumsum and cumprod (OP 0 and 1, a specialisation constant) of one dtype DT
// (1 f16, 2 bf16, 3 f32, 4 i32, 5 i64): one invocation per row along the
// axis. x and y are contiguous; row r starts at (r / after) * len * after +
// r % after and steps by |after|.
//
// Parameters: 0 rows, 1 len, 2 after, 3 x's element offset, 4 y's, 5
// exclusive, 6 reverse.
//
// Float sums are compensated (Kahan, precise: no reassociation), so that the
// f32 accumulator stays within the accumulate tolerance over long rows; an
// infinite partial sum drops the compensation (inf - inf would be NaN).
// Integers wrap (GLSL's integer arithmetic is modular).
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, x)
TENSOR(3, DT, y)

#define T CAT(COMPUTE_, DT)

void main() {
  uint rows = PU(0);
  int len = P(1);
  uint after = PU(2);
  bool exclusive = P(5) != 0;
  bool reverse = P(6) != 0;
  for (uint r = gl_GlobalInvocationID.x; r < rows; r += thread_count()) {
    uint base = r / after * uint(len) * after + r % after;
    precise T acc = OP == 1 ? T(1) : T(0);
    precise T comp = T(0);
    for (int k = 0; k < len; ++k) {
      uint i = base + uint(reverse ? len - 1 - k : k) * after;
      T v = load_x(PU(3) + i);
      precise T next;
      if (OP == 1) {
        next = acc * v;
      } else {
#if DT <= 3
        precise T term = v - comp;
        next = acc + term;
        comp = isinf(next) ? 0.0 : (next - acc) - term;
#else
        next = acc + v;
#endif
      }
      store_y(PU(4) + i, exclusive ? acc : next);
      acc = next;
    }
  }
}
