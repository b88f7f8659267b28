// sort, argsort and topk of one dtype DT (1 f16, 2 bf16, 3 f32, 4 i32, 5
// i64): one invocation per element. Its rank in its row is the number of
// elements ordered before it (NaN above everything, equal values by index);
// the element goes to that position if it is below k, its value copied bit
// for bit. x is contiguous: row r starts at (r / after) * n * after + r %
// after and steps by |after|; the outputs have k along the axis.
//
// Parameters: 0 elements, 1 n, 2 after, 3 k, 4 x's element offset, 5 the
// values', 6 the indices', 7 descending, 8 whether to write values.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;  // unused: one operation

TENSOR(0, DT, x)
TENSOR(1, DT, v)
TENSOR(2, 5, ind)

#define T CAT(COMPUTE_, DT)

bool below(T p, T q) {
#if DT <= 3
  return !isnan(p) && (isnan(q) || p < q);
#else
  return p < q;
#endif
}

void main() {
  uint total = PU(0);
  uint n = PU(1), after = PU(2), k = PU(3);
  bool descending = P(7) != 0;
  for (uint e = gl_GlobalInvocationID.x; e < total; e += thread_count()) {
    uint r = e / n, i = e % n;
    uint base = PU(4) + r / after * n * after + r % after;
    T p = load_x(base + i * after);
    uint rank = 0u;
    for (uint j = 0u; j < n; ++j) {
      T q = load_x(base + j * after);
      bool first = descending ? below(p, q) : below(q, p);
      bool tie = !below(p, q) && !below(q, p);
      if (first || (tie && j < i)) ++rank;
    }
    if (rank >= k) continue;
    uint o = r / after * k * after + r % after + rank * after;
    if (P(8) != 0) v.v[PU(5) + o] = x.v[base + i * after];
    ind.v[PU(6) + o] = int64_t(i);
  }
}
