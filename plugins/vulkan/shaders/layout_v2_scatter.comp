// scatter / scatter_add: one invocation per line of index along the axis,
// in index order along it (the last writer wins; sums are added in order).
// An index outside [0, bound) fails the stream through the error word.
//
// Parameters: 0 lines, 1 ndim, 2..9 index's shape with the axis extent 1,
// 10..17 y strides, 18..25 index (and src) strides, 26 along (index's
// extent on the axis), 27 index stride on the axis, 28 y stride on the axis,
// 29 bound, 30 add, 31 y offset, 32 index offset, 33 src offset.
#version 450
#include "common.glsl"

TENSOR(0, DTI, index)
TENSOR(1, DT, src)
TENSOR(3, DT, y)

#define TI CAT(COMPUTE_, DTI)

void main() {
  uint lines = PU(0);
  int nd = P(1);
  for (uint l = gl_GlobalInvocationID.x; l < lines; l += thread_count()) {
    int yo = P(31) + strided_offset(l, nd, 2, 10);
    int io = strided_offset(l, nd, 2, 18);
    for (int j = 0; j < P(26); ++j) {
      int ii = io + j * P(27);
      TI k = load_index(uint(P(32) + ii));
      if (k < TI(0) || k >= TI(P(29))) {
        fail_index(P(30) != 0 ? 9u : 8u, int64_t(k), int64_t(P(29)));
        continue;
      }
      uint q = uint(yo + int(k) * P(28));
      uint s = uint(P(33) + ii);
      if (P(30) != 0) {
        store_y(q, load_y(q) + load_src(s));
      } else {
        y.v[q] = src.v[s];
      }
    }
  }
}
