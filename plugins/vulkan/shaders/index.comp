// index_select, gather and embedding as one strided lookup: for each output
// position p, y[p] = x[x_offset + sum p_d * xs_d + index[i_offset + sum p_d *
// is_d] * axis_stride]. An index outside [0, bound) fails the stream through
// the error word; the element is left unwritten.
//
// Parameters: 0 n, 1 ndim, 2..9 shape of y, 10 x offset, 11..18 xs, 19 index
// offset, 20..27 is, 28 y offset, 29 axis stride, 30 bound, 31 the operator's
// code for fail_index (1 index_select, 2 gather, 3 embedding).
#version 450
#include "common.glsl"

TENSOR(0, DTX, x)
TENSOR(1, DTI, index)
TENSOR(3, DTX, y)

void main() {
  uint n = PU(0);
  int nd = P(1);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    uint ii = uint(P(19) + strided_offset(i, nd, 2, 20));
    CAT(COMPUTE_, DTI) k = load_index(ii);
    if (k < 0 || k >= P(30)) {
      fail_index(PU(31), int64_t(k), int64_t(P(30)));
      continue;
    }
    int xi = P(10) + strided_offset(i, nd, 2, 11) + int(k) * P(29);
    y.v[uint(P(28)) + i] = x.v[uint(xi)];
  }
}
