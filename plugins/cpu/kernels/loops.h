// Strided and broadcast iteration for the cpu kernels: N operands walked
// together over one shape, in runs along the innermost dimension that OpenMP
// shares out across threads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "kernels/kernel.h"

namespace oar::cpu {

// Elements per parallel task; loops of at most two tasks stay on one thread.
inline constexpr int64_t kGrain = 16384;

// N operands over one shape. Operand k's element at multi-index i is at
// data[k] + sum(i[d] * strides[k][d]) elements.
template <int N>
struct Loop {
  char* data[N] = {};
  int ndim = 0;
  int64_t shape[ops::kMaxDims] = {};
  int64_t strides[N][ops::kMaxDims] = {};

  int64_t numel() const {
    int64_t n = 1;
    for (int d = 0; d < ndim; ++d) n *= shape[d];
    return n;
  }
  // Stride of operand |k| along the innermost dimension (runs advance by it).
  int64_t inner_stride(int k) const { return ndim > 0 ? strides[k][ndim - 1] : 0; }
  template <typename T>
  T* ptr(int k) const {
    return reinterpret_cast<T*>(data[k]);
  }
};

// The loop over |views[0]|'s shape with every operand broadcast to it (NumPy
// rules: missing leading and size-1 dimensions get stride 0). Dimensions of
// extent 1 are dropped and neighbours merged where every operand allows, so a
// contiguous call becomes one long run. Throws INVALID_ARGUMENT if an operand
// does not broadcast.
template <int N>
Loop<N> make_loop(const View (&views)[N]) {
  Loop<N> loop;
  const View& target = views[0];
  for (int k = 0; k < N; ++k) {
    loop.data[k] = views[k].data;
    oar::sdk::require(views[k].ndim <= target.ndim, OAR_STATUS_INVALID_ARGUMENT,
                      "an input has more dimensions than the output");
  }
  for (int d = 0; d < target.ndim; ++d) {
    const int64_t extent = target.shape[d];
    int64_t stride[N];
    for (int k = 0; k < N; ++k) {
      const int vd = d - (target.ndim - views[k].ndim);
      const int64_t have = vd < 0 ? 1 : views[k].shape[vd];
      oar::sdk::require(have == extent || have == 1, OAR_STATUS_INVALID_ARGUMENT,
                        "shapes do not broadcast: extent " + std::to_string(have) + " against " +
                            std::to_string(extent) + " in dimension " + std::to_string(d));
      stride[k] = have == extent && vd >= 0 ? views[k].strides[vd] : 0;
    }
    if (extent == 1) continue;
    bool merge = loop.ndim > 0;
    for (int k = 0; k < N && merge; ++k) {
      merge = loop.strides[k][loop.ndim - 1] == stride[k] * extent;
    }
    if (!merge) loop.shape[loop.ndim++] = 1;
    loop.shape[loop.ndim - 1] *= extent;
    for (int k = 0; k < N; ++k) loop.strides[k][loop.ndim - 1] = stride[k];
  }
  return loop;
}

// Calls |run(offsets, n)| for every run of n elements along the innermost
// dimension; offsets[k] is operand k's element offset of the run's first
// element. Runs may be split, never reordered within a task; tasks go to
// OpenMP threads, so |run| must not throw.
template <int N, typename Run>
void for_each_run(const Loop<N>& loop, Run&& run) {
  const int64_t total = loop.numel();
  if (total == 0) return;
  if (loop.ndim == 0) {
    const int64_t zero[N] = {};
    run(zero, int64_t(1));
    return;
  }
  const int last = loop.ndim - 1;
  const int64_t tasks = (total + kGrain - 1) / kGrain;
#pragma omp parallel for if (tasks > 2) schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t begin = task * kGrain;
    const int64_t end = std::min(total, begin + kGrain);
    int64_t index[ops::kMaxDims];
    int64_t offset[N] = {};
    int64_t rest = begin;
    for (int d = last; d >= 0; --d) {
      index[d] = rest % loop.shape[d];
      rest /= loop.shape[d];
      for (int k = 0; k < N; ++k) offset[k] += index[d] * loop.strides[k][d];
    }
    while (begin < end) {
      const int64_t n = std::min(loop.shape[last] - index[last], end - begin);
      run(static_cast<const int64_t*>(offset), n);
      begin += n;
      index[last] += n;
      for (int k = 0; k < N; ++k) offset[k] += n * loop.strides[k][last];
      for (int d = last; d > 0 && index[d] == loop.shape[d]; --d) {
        index[d] = 0;
        ++index[d - 1];
        for (int k = 0; k < N; ++k) {
          offset[k] += loop.strides[k][d - 1] - loop.shape[d] * loop.strides[k][d];
        }
      }
    }
  }
}

// Calls |f(W{})| with the unsigned integer type of |bytes| bytes, for loops
// that move elements without looking at them.
template <typename F>
decltype(auto) with_element_size(size_t bytes, F&& f) {
  switch (bytes) {
    case 1:
      return f(uint8_t{});
    case 2:
      return f(uint16_t{});
    case 4:
      return f(uint32_t{});
    case 8:
      return f(uint64_t{});
    default:
      throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                            "no element type of " + std::to_string(bytes) + " bytes");
  }
}

// The copy of operand 1 into operand 0 (one shape, any strides).
inline Loop<2> copy_loop(const View& dst, const View& src) {
  oar::sdk::require(dst.ndim == src.ndim, OAR_STATUS_INVALID_ARGUMENT,
                    "copy between tensors of different ranks");
  const View views[2] = {dst, src};
  return make_loop(views);
}

// A copy whose source is contiguous along another dimension than the
// destination (a transpose) moves square tiles, so both sides stay in cache.
// Returns false, copying nothing, for any other copy.
template <typename W>
bool copy_tiled(const Loop<2>& loop) {
  if (loop.numel() == 0) return true;  // nothing to copy (and no tile count to divide by)
  const int last = loop.ndim - 1;
  if (last < 1 || loop.strides[0][last] != 1 || loop.strides[1][last] == 1) return false;
  int p = -1;
  for (int d = 0; d < last; ++d) p = loop.strides[1][d] == 1 ? d : p;
  if (p < 0) return false;
  constexpr int64_t kTile = 32;
  const int64_t rows = loop.shape[p], cols = loop.shape[last];
  const int64_t col_tiles = (cols + kTile - 1) / kTile;
  const int64_t tiles = (rows + kTile - 1) / kTile * col_tiles;
  const int64_t total = loop.numel() / (rows * cols) * tiles;
  const int64_t dst_row = loop.strides[0][p], src_col = loop.strides[1][last];
#pragma omp parallel for if (loop.numel() > 2 * kGrain) schedule(static)
  for (int64_t t = 0; t < total; ++t) {
    int64_t batch = t / tiles, offset[2] = {0, 0};
    for (int d = last - 1; d >= 0; --d) {
      if (d == p) continue;
      const int64_t i = batch % loop.shape[d];
      batch /= loop.shape[d];
      for (int k = 0; k < 2; ++k) offset[k] += i * loop.strides[k][d];
    }
    const int64_t r0 = t % tiles / col_tiles * kTile, c0 = t % col_tiles * kTile;
    const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
    W* dst = loop.template ptr<W>(0) + offset[0];
    const W* src = loop.template ptr<W>(1) + offset[1];
    for (int64_t r = r0; r < r1; ++r) {
      for (int64_t c = c0; c < c1; ++c) dst[r * dst_row + c] = src[r + c * src_col];
    }
  }
  return true;
}

// Runs a copy_loop on the calling thread (and OpenMP's).
inline void run_copy(const Loop<2>& loop, size_t element_size) {
  with_element_size(element_size, [&](auto word) {
    using W = decltype(word);
    if (copy_tiled<W>(loop)) return;
    const int64_t sd = loop.inner_stride(0), ss = loop.inner_stride(1);
    for_each_run(loop, [&](const int64_t* offset, int64_t n) {
      W* d = loop.template ptr<W>(0) + offset[0];
      const W* s = loop.template ptr<W>(1) + offset[1];
      if (sd == 1 && ss == 1) {
        std::memcpy(d, s, size_t(n) * sizeof(W));
        return;
      }
      for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
    });
  });
}

}  // namespace oar::cpu
