// one_hot: y[p, c] = index[p] == c ? 1 : 0 in y's dtype; an index outside
// [0, classes) fails the stream through the error word (the element is 0).
//
// Parameters: 0 n, 1 classes, 2 index offset, 3 y offset (elements).
#version 450
#include "common.glsl"

TENSOR(0, DTI, index)
TENSOR(3, DT, y)

void main() {
  uint n = PU(0);
  uint classes = PU(1);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
#define TI CAT(COMPUTE_, DTI)
    TI k = load_index(PU(2) + i / classes);
    bool bad = k < TI(0) || k >= TI(classes);
    if (bad) fail_index(7u, int64_t(k), int64_t(classes));
    store_y(PU(3) + i, CAT(COMPUTE_, DT)(!bad && k == TI(i % classes) ? 1 : 0));
  }
}
