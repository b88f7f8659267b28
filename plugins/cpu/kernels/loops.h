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

using oar::sdk::Loop;
using oar::sdk::make_loop;

// Calls |run(offsets, n)| for every run of n elements along the innermost
// dimension (oar::sdk::for_each_run), sharing the elements out across OpenMP
// threads in tasks of kGrain; loops of at most two tasks stay on the calling
// thread. Runs are never reordered within a task; |run| must not throw.
template <int N, typename Run>
void parallel_for_each_run(const Loop<N>& loop, Run&& run) {
  const int64_t total = loop.numel();
  if (total == 0) return;
  const int64_t tasks = (total + kGrain - 1) / kGrain;
  // Small loops never enter OpenMP: even a region whose if clause is false
  // costs libgomp a futex wake-up per call on a thread that has a pool.
  if (tasks <= 2) {
    oar::sdk::for_each_run(loop, 0, total, run);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    const int64_t begin = task * kGrain;
    oar::sdk::for_each_run(loop, begin, std::min(total, begin + kGrain), run);
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
    parallel_for_each_run(loop, [&](const int64_t* offset, int64_t n) {
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
