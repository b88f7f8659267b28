// The im2col matrix of a convolution's input, a row at a time: conv2d's
// forward (nn.cc) builds it by tiles of output rows, conv2d_grad_weight
// (nn_grad.cc) whole.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

namespace oar::cpu {

// An input plane [h, w] read through a kh x kw window into [oh, ow] outputs.
struct Im2col {
  int64_t h, w, oh, ow, kh, kw;
  std::array<int64_t, 2> stride, padding, dilation;
};

// Row r = (c, i, j) of the col matrix for output rows [oh0, oh1), x at the
// group's [C, h, w] planes:
// out[(oh - oh0) * ow + o] = x[c, oh * sh - ph + i * dh, o * sw - pw + j * dw],
// 0 outside x. The in-bounds run of each output row is one copy (stride 1) or
// one strided gather: an element at a time with bounds checks took 38% of
// conv2d_grad_weight's time.
template <typename F>
void im2col_row(const F* x, const Im2col& s, int64_t r, int64_t oh0, int64_t oh1, F* out) {
  const int64_t i = r / s.kw % s.kh, j = r % s.kw;
  const F* xc = x + r / (s.kh * s.kw) * s.h * s.w;
  const int64_t sw = s.stride[1], shift = j * s.dilation[1] - s.padding[1];
  // o in [lo, hi) reads inside the row: 0 <= o * sw + shift < w.
  const int64_t lo = std::min(s.ow, shift >= 0 ? 0 : (-shift + sw - 1) / sw);
  const int64_t hi =
      std::max(lo, std::min(s.ow, s.w - shift <= 0 ? 0 : (s.w - shift + sw - 1) / sw));
  for (int64_t oh = oh0; oh < oh1; ++oh, out += s.ow) {
    const int64_t ih = oh * s.stride[0] - s.padding[0] + i * s.dilation[0];
    if (ih < 0 || ih >= s.h) {
      std::fill(out, out + s.ow, F(0));
      continue;
    }
    const F* in = xc + ih * s.w + shift;
    std::fill(out, out + lo, F(0));
    if (sw == 1) {
      std::copy(in + lo, in + hi, out + lo);
    } else {
      for (int64_t o = lo; o < hi; ++o) out[o] = in[o * sw];
    }
    std::fill(out + hi, out + s.ow, F(0));
  }
}

}  // namespace oar::cpu
