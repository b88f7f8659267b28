// tril / triu over contiguous x and y: element i sits in column i % cols of
// row (i / cols) % rows of its matrix; it is kept when column - row is on the
// kept side of the diagonal (which the host clamped to [-rows, cols]), else
// stored as 0 (+0, 0 or false).
//
// Parameters: 0 n, 1 cols, 2 rows, 3 diagonal, 4 lower (1 tril, 0 triu),
// 5 x offset, 6 y offset (elements).
#version 450
#include "common.glsl"

TENSOR(0, DT, x)
TENSOR(3, DT, y)

void main() {
  uint n = PU(0);
  uint cols = PU(1);
  uint rows = PU(2);
  int diagonal = P(3);
  bool lower = P(4) != 0;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    int d = int(i % cols) - int((i / cols) % rows);
    bool keep = lower ? d <= diagonal : d >= diagonal;
    y.v[PU(6) + i] = keep ? x.v[PU(5) + i] : CAT(STORAGE_, DT)(0);
  }
}
