// matmul as a tiled GEMM, f32 accumulation. Transposes and broadcast batch
// dimensions are strides.
//
// A workgroup of WX invocations (the pipeline's workgroup size, 64) computes
// a tile of MM_TM rows x WX * MM_TN columns of one matrix of the batch. Each
// invocation keeps MM_TM x MM_TN accumulators in registers for the columns
// lx, lx + WX, ..., lx + (MM_TN - 1) * WX of the tile, so that neighbouring
// invocations read neighbouring elements of b (coalesced on GPUs; on
// llvmpipe, which runs 8 invocations as the lanes of one vector and loads
// every lane's element separately, the loads of b are the cost). K is walked
// in steps of MM_BK, unrolled. Every invocation needs the same MM_TM values
// of a per k; they reach it one of two ways:
//  - MM_SUBGROUP (the default, devices with subgroup broadcasts and
//    subgroups of 8 or more): lane l of each subgroup loads row l % 8 of each
//    group of 8 rows, and subgroupBroadcast hands each row to every lane: one
//    load per 8 rows instead of 8, through registers rather than memory;
//  - MM_SHARED (matmul_plain_*): the workgroup copies the MM_TM x MM_BK tile
//    of a into shared memory together, then every invocation reads it;
//  - neither: each invocation loads them from the buffer.
// MM_VEC4 (matmul_v4_3: f32, b's rows contiguous, N and b's row starts
// multiples of 4) reads b as vec4s: lane lx owns the 4-column groups
// j * WX + lx of the tile, one 16-byte load each per k instead of 4 element
// loads (llvmpipe runs one loop over the lanes per load, not per component).
// Workgroups take tiles in a grid-stride loop (every invocation of a
// workgroup runs the same number of turns, so barriers and broadcasts are in
// uniform control flow). Rows past M and columns past N load the last row or
// column (clamped addresses) and are not stored; k past K contributes zeros.
//
// Parameters: 0 tiles (batch * row tiles * column tiles), 1 batch ndim,
// 2..9 batch shape, 10..17 a batch strides, 18..25 b batch strides, 26 M,
// 27 N, 28 K, 29 a offset, 30 a m stride, 31 a k stride, 32 b offset, 33 b k
// stride, 34 b n stride, 35 y offset, 36 row tiles, 37 column tiles.
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"

TENSOR(0, DT, a)
#if MM_VEC4
// f32 with b's rows contiguous, 16-byte aligned and N a multiple of 4 (the
// host checks): b as vec4s, so a lane loads 4 columns in one load.
layout(std430, set = 0, binding = 1) buffer b_block { vec4 v[]; }
b;
#else
TENSOR(1, DT, b)
#endif
TENSOR(3, DT, y)

#ifndef MM_TM
#define MM_TM 8
#endif
#ifndef MM_TN
#define MM_TN 8
#endif
#ifndef MM_BK
#define MM_BK 16
#endif
#ifndef MM_SHARED
#define MM_SHARED 0
#endif
#ifndef MM_SUBGROUP
#define MM_SUBGROUP 1
#endif
#ifndef MM_VEC4
#define MM_VEC4 0
#endif
#if MM_VEC4
#define MM_NB (MM_TN / 4)  // vec4 loads of b per k
#endif

#if MM_SHARED
shared float a_tile[MM_TM][MM_BK];
#endif

void main() {
  const uint tiles = PU(0);
  const uint M = PU(26), N = PU(27), K = PU(28);
  const uint row_tiles = PU(36), col_tiles = PU(37);
  const uint WX = gl_WorkGroupSize.x;
  const uint lx = gl_LocalInvocationID.x;
  const int a_m = P(30), a_k = P(31), b_k = P(33), b_n = P(34);
  for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x) {
    const uint tile_col = t % col_tiles;
    const uint tile_row = (t / col_tiles) % row_tiles;
    const uint batch = t / (col_tiles * row_tiles);
    const uint row0 = tile_row * MM_TM;
    const uint col0 = tile_col * WX * MM_TN;
    const int a_base = P(29) + strided_offset(batch, P(1), 2, 10);
    const int b_base = P(32) + strided_offset(batch, P(1), 2, 18);
#if MM_VEC4
    // Lane lx owns columns 4 (j WX + lx) .. + 3 of the tile for j < MM_NB.
    int b_col[MM_NB];
    [[unroll]] for (uint j = 0u; j < MM_NB; ++j) {
      b_col[j] = b_base / 4 + int(min(col0 / 4u + j * WX + lx, N / 4u - 1u));
    }
#else
    int b_col[MM_TN];
    [[unroll]] for (uint j = 0u; j < MM_TN; ++j) {
      b_col[j] = b_base + int(min(col0 + j * WX + lx, N - 1u)) * b_n;
    }
#endif
#if MM_SUBGROUP
    uint a_row_lane[MM_TM / 8];
    [[unroll]] for (uint h = 0u; h < MM_TM / 8; ++h) {
      a_row_lane[h] = min(row0 + h * 8u + gl_SubgroupInvocationID % 8u, M - 1u);
    }
#endif
    float acc[MM_TM][MM_TN];
    [[unroll]] for (uint i = 0u; i < MM_TM; ++i) {
      [[unroll]] for (uint j = 0u; j < MM_TN; ++j) acc[i][j] = 0.0;
    }
    for (uint k0 = 0u; k0 < K; k0 += MM_BK) {
#if MM_SHARED
      barrier();  // the previous step's reads of a_tile are done
      for (uint e = lx; e < MM_TM * MM_BK; e += WX) {
        uint r = e / MM_BK, c = e % MM_BK;
        uint gr = row0 + r, gk = k0 + c;
        a_tile[r][c] = (gr < M && gk < K) ? load_a(uint(a_base + int(gr) * a_m + int(gk) * a_k)) : 0.0;
      }
      barrier();
#endif
      const uint last = K - 1u;
      [[unroll]] for (uint kk = 0u; kk < MM_BK; ++kk) {
        const int bk = int(min(k0 + kk, last)) * b_k;
#if MM_SUBGROUP
        const int bk_a = int(min(k0 + kk, last)) * a_k;
#endif
#if MM_SUBGROUP
        // Lane l of the subgroup reads row l % MM_TM of a; the rows reach
        // every lane by broadcasts (registers, not memory).
        float a_lane[MM_TM / 8];
        [[unroll]] for (uint h = 0u; h < MM_TM / 8; ++h) {
          const float v = load_a(uint(a_base + int(a_row_lane[h]) * a_m + bk_a));
          a_lane[h] = k0 + kk < K ? v : 0.0;  // past K: zeros (the address is clamped)
        }
#endif
        float bv[MM_TN];
#if MM_VEC4
        [[unroll]] for (uint j = 0u; j < MM_NB; ++j) {
          const vec4 q = b.v[uint(b_col[j] + bk / 4)];
          bv[4u * j] = q.x;
          bv[4u * j + 1u] = q.y;
          bv[4u * j + 2u] = q.z;
          bv[4u * j + 3u] = q.w;
        }
#else
        [[unroll]] for (uint j = 0u; j < MM_TN; ++j) bv[j] = load_b(uint(b_col[j] + bk));
#endif
        [[unroll]] for (uint i = 0u; i < MM_TM; ++i) {
#if MM_SHARED
          const float av = a_tile[i][kk];
#elif MM_SUBGROUP
          const float av = subgroupBroadcast(a_lane[i / 8u], i % 8u);
#else
          const uint gr = min(row0 + i, M - 1u);
          const float av = k0 + kk < K ? load_a(uint(a_base + int(gr) * a_m + int(k0 + kk) * a_k)) : 0.0;
#endif
          [[unroll]] for (uint j = 0u; j < MM_TN; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
        }
      }
    }
    const uint y_base = PU(35) + batch * M * N;
    [[unroll]] for (uint i = 0u; i < MM_TM; ++i) {
      const uint row = row0 + i;
      if (row >= M) break;
      [[unroll]] for (uint j = 0u; j < MM_TN; ++j) {
#if MM_VEC4
        const uint col = col0 + 4u * ((j / 4u) * WX + lx) + j % 4u;
#else
        const uint col = col0 + j * WX + lx;
#endif
        if (col < N) store_y(y_base + row * N + col, acc[i][j]);
      }
    }
  }
}
