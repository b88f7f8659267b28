// matmul, f32, the aligned fast path: both operands read 8 floats per load.
// kernels/nn.cc takes it when a's rows and b's rows are contiguous (a not
// transposed, b not transposed), K and N are multiples of 8, and every row
// start of a, b and y (offsets, row strides, batch strides) is a multiple of
// 8 elements; matmul.comp serves every other shape and dtype.
//
// Structure (README.md, "matmul"): a workgroup of WX invocations (64)
// computes an MM_TM x WX * MM_TN tile of one matrix of the batch; invocation
// lx keeps MM_TM x MM_TN accumulators for the 8-column groups
// col0 / 8 + j WX + lx, j < MM_TN / 8, of the tile. K advances in steps of
// 8. Per step:
//  - a: lane l of each subgroup loads 8 consecutive k of row l % 8 of each
//    group of 8 rows (one 32-byte load per 8 rows per 8 k) and
//    subgroupBroadcast hands every (row, k) value to every lane;
//  - b: per k each invocation loads its 8-column groups, 32 bytes each;
//  - MM_TM x MM_TN FMAs per k.
// A 32-byte load is a u64vec4 (the widest load GLSL has; 64-bit integers
// the plugin requires anyway) split into 8 floats. Loads are the cost on
// llvmpipe, which lowers each storage-buffer load into a loop over the
// lanes with a bounds check and a scalar load per component: a u64vec4
// takes that loop once per 8 floats (a vec4 once per 4, a float once per
// float), and the broadcasts make a's share small. On a GPU the same reads
// are 32-byte loads of neighbouring addresses by neighbouring lanes
// (coalesced) and register broadcasts. The host picks the tile: 16 x 16 on
// CPU devices (modules matmul_wide_3), 8 x 8 on GPUs (matmul_wide8_3).
// Workgroups take tiles in a grid-stride loop (uniform trip counts, so the
// broadcasts are in uniform control flow). Rows past M load the last row
// and column groups past N the last group (clamped addresses); neither is
// stored. K needs no edge.
//
// Parameters as matmul.comp: 0 tiles, 1 batch ndim, 2..9 batch shape,
// 10..17 a batch strides, 18..25 b batch strides, 26 M, 27 N, 28 K, 29 a
// offset, 30 a m stride, 31 a k stride (1), 32 b offset, 33 b k stride,
// 34 b n stride (1), 35 y offset, 36 row tiles, 37 column tiles. Element
// units; the host checks the multiples of 8.
#version 450
#extension GL_EXT_control_flow_attributes : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_ballot : require
#include "common.glsl"

layout(std430, set = 0, binding = 0) readonly buffer a_block { u64vec4 v[]; }
a;
layout(std430, set = 0, binding = 1) readonly buffer b_block { u64vec4 v[]; }
b;
layout(std430, set = 0, binding = 3) writeonly buffer y_block { u64vec4 v[]; }
y;

#ifndef MM_TM
#define MM_TM 16
#endif
#ifndef MM_TN
#define MM_TN 16
#endif
#define MM_NB (MM_TN / 8)  // 32-byte loads of b per k
#define MM_NA (MM_TM / 8)  // 32-byte loads of a per lane per 8 k

// The 8 floats of a 32-byte load.
void unpack8(u64vec4 q, out float f[8]) {
  [[unroll]] for (uint c = 0u; c < 4u; ++c) {
    const uvec2 w = unpackUint2x32(q[c]);
    f[2u * c] = uintBitsToFloat(w.x);
    f[2u * c + 1u] = uintBitsToFloat(w.y);
  }
}

uint64_t pack2(float lo, float hi) {
  return packUint2x32(uvec2(floatBitsToUint(lo), floatBitsToUint(hi)));
}

void main() {
  const uint tiles = PU(0);
  const uint M = PU(26), N = PU(27), K = PU(28);
  const uint row_tiles = PU(36), col_tiles = PU(37);
  const uint WX = gl_WorkGroupSize.x;
  const uint lx = gl_LocalInvocationID.x;
  const uint lane = gl_SubgroupInvocationID % 8u;
  // Strides in 32-byte units.
  const uint a_m = PU(30) / 8u, b_k = PU(33) / 8u;
  for (uint t = gl_WorkGroupID.x; t < tiles; t += gl_NumWorkGroups.x) {
    const uint tile_col = t % col_tiles;
    const uint tile_row = (t / col_tiles) % row_tiles;
    const uint batch = t / (col_tiles * row_tiles);
    const uint row0 = tile_row * MM_TM;
    const uint col0 = tile_col * WX * MM_TN;
    const uint a_base = uint(P(29) + strided_offset(batch, P(1), 2, 10)) / 8u;
    const uint b_base = uint(P(32) + strided_offset(batch, P(1), 2, 18)) / 8u;
    uint a_at[MM_NA];
    [[unroll]] for (uint h = 0u; h < MM_NA; ++h) {
      a_at[h] = a_base + min(row0 + 8u * h + lane, M - 1u) * a_m;
    }
    uint b_at[MM_NB];
    [[unroll]] for (uint j = 0u; j < MM_NB; ++j) {
      b_at[j] = b_base + min(col0 / 8u + j * WX + lx, N / 8u - 1u);
    }
    float acc[MM_TM][MM_TN];
    [[unroll]] for (uint i = 0u; i < MM_TM; ++i) {
      [[unroll]] for (uint j = 0u; j < MM_TN; ++j) acc[i][j] = 0.0;
    }
    for (uint k8 = 0u; k8 < K / 8u; ++k8) {
      float a_lane[MM_NA][8];
      [[unroll]] for (uint h = 0u; h < MM_NA; ++h) unpack8(a.v[a_at[h] + k8], a_lane[h]);
      [[unroll]] for (uint kk = 0u; kk < 8u; ++kk) {
        const uint bk = (8u * k8 + kk) * b_k;
        float bv[MM_TN];
        [[unroll]] for (uint j = 0u; j < MM_NB; ++j) {
          float q[8];
          unpack8(b.v[b_at[j] + bk], q);
          [[unroll]] for (uint c = 0u; c < 8u; ++c) bv[8u * j + c] = q[c];
        }
        [[unroll]] for (uint i = 0u; i < MM_TM; ++i) {
          const float av = subgroupBroadcast(a_lane[i / 8u][kk], i % 8u);
          [[unroll]] for (uint j = 0u; j < MM_TN; ++j) acc[i][j] = fma(av, bv[j], acc[i][j]);
        }
      }
    }
    const uint y_base = (PU(35) + batch * M * N) / 8u;
    [[unroll]] for (uint i = 0u; i < MM_TM; ++i) {
      const uint row = row0 + i;
      if (row >= M) break;
      [[unroll]] for (uint j = 0u; j < MM_NB; ++j) {
        const uint group = col0 / 8u + j * WX + lx;
        if (group < N / 8u) {
          y.v[y_base + row * (N / 8u) + group] =
              u64vec4(pack2(acc[i][8u * j], acc[i][8u * j + 1u]),
                      pack2(acc[i][8u * j + 2u], acc[i][8u * j + 3u]),
                      pack2(acc[i][8u * j + 4u], acc[i][8u * j + 5u]),
                      pack2(acc[i][8u * j + 6u], acc[i][8u * j + 7u]));
        }
      }
    }
  }
}
