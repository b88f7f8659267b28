// matmul as a GPU-style tiled GEMM for one float dtype X (f16, bf16, f32,
// f64; 16-bit types are loaded and stored through LD/ST and computed in f32).
//
// A work-group of GEMM_LX x GEMM_LY work-items computes a BM x BN block of y
// (BM = GEMM_LY * GEMM_TM rows, BN = GEMM_LX * TN columns). It walks K in
// steps of GEMM_BK: the work-items copy a BM x GEMM_BK tile of a and a
// GEMM_BK x BN tile of b into local memory together (GEMM_VW-wide vector
// loads where the operand is contiguous along the copied dimension and the
// step lies inside K, element loads with strides and bounds checks
// otherwise), meet at a barrier, and each work-item then
// accumulates its GEMM_TM x TN register tile (TM rows of GEMM_NV vectors of
// GEMM_VW columns, TN = GEMM_NV * GEMM_VW): per step of k one or two vector
// loads of b from local memory, TM broadcasts of a, TM x NV vector FMAs.
// Rows and columns past M and N are zeros in the tiles and are not stored;
// K past its end is zeros. Batch dimensions are the third range dimension,
// broadcast through zero strides; transposes are strides (mm_t).
//
// The tile shape is set per device by the host (kernels/gemm.cc) as #defines
// before this text. The accumulators are named variables rather than an
// array: on CPU implementations (PoCL) that keep each work-item's live values
// across a barrier in memory, an array indexed in loops stays in memory
// inside the k loop as well, while named vectors are loaded into registers
// once per tile.

#ifndef GEMM_LX
#define GEMM_LX 16
#define GEMM_LY 16
#define GEMM_TM 4
#define GEMM_NV 1
#define GEMM_VW 4
#define GEMM_BK 16
#endif

#define TN (GEMM_NV * GEMM_VW)
#define BM (GEMM_LY * GEMM_TM)
#define BN (GEMM_LX * TN)
#define WG (GEMM_LX * GEMM_LY)
#ifdef X_F64
#define GEMM_CT double  // CX as a token, for the vector type's name
#else
#define GEMM_CT float
#endif
#define VT CAT(GEMM_CT, GEMM_VW)
#define VLOAD CAT(vload, GEMM_VW)
#define VSTORE CAT(vstore, GEMM_VW)
#if defined(X_F32) || defined(X_F64)
#define GEMM_VECTOR_GLOBAL 1  // storage type == compute type: vector loads from global memory
#endif

// Mirrors Matmul of kernels/gemm.cc.
typedef struct {
  long m, n, k;
  long a_m, a_k; /* a's strides along m and k (transpose_a swaps them) */
  long b_k, b_n;
  long batch_rank;
  long batch_shape[6];
  long a_batch[6];
  long b_batch[6];
  long a_offset, b_offset, y_offset; /* bytes */
} mm_t;

// R(X): X(i) for every row i < GEMM_TM of a work-item's tile.
#define GEMM_R1(F) F(0)
#define GEMM_R2(F) GEMM_R1(F) F(1)
#define GEMM_R3(F) GEMM_R2(F) F(2)
#define GEMM_R4(F) GEMM_R3(F) F(3)
#define GEMM_R5(F) GEMM_R4(F) F(4)
#define GEMM_R6(F) GEMM_R5(F) F(5)
#define GEMM_R7(F) GEMM_R6(F) F(6)
#define GEMM_R8(F) GEMM_R7(F) F(7)
#define GEMM_R9(F) GEMM_R8(F) F(8)
#define GEMM_R10(F) GEMM_R9(F) F(9)
#define GEMM_R11(F) GEMM_R10(F) F(10)
#define GEMM_R12(F) GEMM_R11(F) F(11)
#define GEMM_R13(F) GEMM_R12(F) F(12)
#define GEMM_R14(F) GEMM_R13(F) F(13)
#define GEMM_R15(F) GEMM_R14(F) F(14)
#define GEMM_R16(F) GEMM_R15(F) F(15)
#define ROWS(F) CAT(GEMM_R, GEMM_TM)(F)

#if GEMM_NV == 2
#define DECLARE(i) VT c##i##_0 = (VT)(0), c##i##_1 = (VT)(0);
#define STEP(i)                             \
  {                                         \
    VT av = (VT)(as[ly * GEMM_TM + i][kk]); \
    c##i##_0 = fma(av, b0, c##i##_0);       \
    c##i##_1 = fma(av, b1, c##i##_1);       \
  }
#define STORE(i)                                   \
  store_vector(py, m, n, row + i, col, c##i##_0); \
  store_vector(py, m, n, row + i, col + GEMM_VW, c##i##_1);
#elif GEMM_NV == 1
#define DECLARE(i) VT c##i##_0 = (VT)(0);
#define STEP(i)                             \
  {                                         \
    VT av = (VT)(as[ly * GEMM_TM + i][kk]); \
    c##i##_0 = fma(av, b0, c##i##_0);       \
  }
#define STORE(i) store_vector(py, m, n, row + i, col, c##i##_0);
#else
#error GEMM_NV must be 1 or 2
#endif

// Stores the GEMM_VW columns of |v| at (r, c) of the m x n matrix at |y|,
// those inside it.
inline void store_vector(gptr y, long m, long n, long r, long c, VT v) {
  if (r >= m) return;
#ifdef GEMM_VECTOR_GLOBAL
  if (c + GEMM_VW <= n) {
    VSTORE(v, 0, (__global SX*)y + r * n + c);
    return;
  }
#endif
  CX lanes[GEMM_VW];
  VSTORE(v, 0, lanes);
  for (int q = 0; q < GEMM_VW && c + q < n; ++q) ST(y, r * n + c + q, lanes[q]);
}

__kernel __attribute__((reqd_work_group_size(GEMM_LX, GEMM_LY, 1))) void gemm(gcptr a, gcptr b,
                                                                              gptr y, mm_t p) {
  __local CX as[BM][GEMM_BK];
  __local CX bs[GEMM_BK][BN];
  const int lx = get_local_id(0), ly = get_local_id(1);
  const int id = ly * GEMM_LX + lx;
  const long row0 = (long)get_group_id(1) * BM, col0 = (long)get_group_id(0) * BN;
  const long z = get_global_id(2);
  long ab = 0, bb = 0, rest = z;
  for (int d = (int)p.batch_rank - 1; d >= 0; --d) {
    long index = rest % p.batch_shape[d];
    rest /= p.batch_shape[d];
    ab += index * p.a_batch[d];
    bb += index * p.b_batch[d];
  }
  gcptr pa = a + p.a_offset;
  gcptr pb = b + p.b_offset;
  ROWS(DECLARE)
  // The fields the k loop uses, read once: PoCL's uniformity analysis does
  // not see through reads of the argument struct inside the loop, and then
  // keeps the accumulators in memory (3x slower here).
  const long m = p.m, n = p.n, k = p.k;
  const long a_m = p.a_m, a_k = p.a_k, b_k = p.b_k, b_n = p.b_n;
#ifdef GEMM_VECTOR_GLOBAL
  const bool vector_a = a_k == 1, vector_b = b_n == 1;
#endif
  for (long k0 = 0; k0 < k; k0 += GEMM_BK) {
#ifdef GEMM_VECTOR_GLOBAL
    const bool whole_k = k0 + GEMM_BK <= k;
    if (vector_a && whole_k) {
      __global const SX* ta = (__global const SX*)pa + ab + row0 * a_m + k0;
      for (int e = id; e < BM * GEMM_BK / GEMM_VW; e += WG) {
        int r = e / (GEMM_BK / GEMM_VW), c = e % (GEMM_BK / GEMM_VW) * GEMM_VW;
        VSTORE(row0 + r < m ? VLOAD(0, ta + r * a_m + c) : (VT)(0), 0, &as[r][c]);
      }
    } else
#endif
    {
      for (int e = id; e < BM * GEMM_BK; e += WG) {
        int r = e / GEMM_BK, c = e % GEMM_BK;
        long gr = row0 + r, gk = k0 + c;
        as[r][c] = (gr < m && gk < k) ? LD(pa, ab + gr * a_m + gk * a_k) : (CX)0;
      }
    }
#ifdef GEMM_VECTOR_GLOBAL
    if (vector_b && whole_k) {
      __global const SX* tb = (__global const SX*)pb + bb + k0 * b_k + col0;
      for (int e = id; e < GEMM_BK * BN / GEMM_VW; e += WG) {
        int r = e / (BN / GEMM_VW), c = e % (BN / GEMM_VW) * GEMM_VW;
        if (col0 + c + GEMM_VW <= n) {
          VSTORE(VLOAD(0, tb + r * b_k + c), 0, &bs[r][c]);
        } else {
          for (int q = 0; q < GEMM_VW; ++q) bs[r][c + q] = col0 + c + q < n ? tb[r * b_k + c + q] : 0;
        }
      }
    } else
#endif
    {
      for (int e = id; e < GEMM_BK * BN; e += WG) {
        int r = e / BN, c = e % BN;
        long gk = k0 + r, gc = col0 + c;
        bs[r][c] = (gk < k && gc < n) ? LD(pb, bb + gk * b_k + gc * b_n) : (CX)0;
      }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < GEMM_BK; ++kk) {
      VT b0 = VLOAD(0, &bs[kk][lx * TN]);
#if GEMM_NV == 2
      VT b1 = VLOAD(0, &bs[kk][lx * TN + GEMM_VW]);
#endif
      ROWS(STEP)
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  gptr py = y + p.y_offset + z * m * n * (long)sizeof(SX);
  const long row = row0 + ly * GEMM_TM, col = col0 + lx * TN;
  ROWS(STORE)
}

#ifdef GEMM_VECTOR_GLOBAL
// The packed path (CPU devices, f32, one matrix; kernels/gemm.cc chooses
// it): a and b are first copied into panels that the product then reads
// front to back, and the product needs no local memory and no barrier.
//  - gemm_pack_a: a's rows in blocks of GEMM_TM, ap[block][k][GEMM_TM]
//    (rows past M are zeros): per step of k the GEMM_TM values a work-item
//    broadcasts are adjacent;
//  - gemm_pack_b: b's columns in panels of TN, bp[panel][k][TN] (columns past
//    N are zeros): per step of k a work-item's TN columns are NV vector loads
//    from one contiguous stream;
//  - gemm_packed: work-item (panel, block) keeps its GEMM_TM x TN tile in
//    registers for the whole of K (no barrier means no spill between steps,
//    which PoCL's work-group loops force at every barrier), reading two
//    contiguous streams the hardware prefetcher follows; a work-group of
//    GEMM_LX x GEMM_LY work-items shares GEMM_LY blocks of a and GEMM_LX
//    panels of b in the caches.
// Offsets are in bytes; strides in elements, as in mm_t.
__kernel void gemm_pack_a(gcptr a, long a_offset, long m, long k, long a_m, long a_k, gptr ap,
                          long ap_offset) {
  const long kk = get_global_id(0), block = get_global_id(1);
  if (kk >= k) return;
  __global const SX* pa = (__global const SX*)(a + a_offset);
  __global SX* out = (__global SX*)(ap + ap_offset) + (block * k + kk) * GEMM_TM;
  for (int i = 0; i < GEMM_TM; ++i) {
    const long r = block * GEMM_TM + i;
    out[i] = r < m ? pa[r * a_m + kk * a_k] : (SX)0;
  }
}

__kernel void gemm_pack_b(gcptr b, long b_offset, long n, long k, long b_k, long b_n, gptr bp,
                          long bp_offset) {
  const long panel = get_global_id(0), kk = get_global_id(1);
  if (kk >= k || panel * TN >= n) return;
  __global const SX* pb = (__global const SX*)(b + b_offset) + kk * b_k;
  __global SX* out = (__global SX*)(bp + bp_offset) + (panel * k + kk) * TN;
  const long c0 = panel * TN;
  if (b_n == 1 && c0 + TN <= n) {
    for (int v = 0; v < GEMM_NV; ++v) VSTORE(VLOAD(0, pb + c0 + v * GEMM_VW), v, out);
  } else {
    for (int j = 0; j < TN; ++j) out[j] = c0 + j < n ? pb[(c0 + j) * b_n] : (SX)0;
  }
}

#if GEMM_NV == 2
#define PSTEP(i)                      \
  {                                   \
    VT av = (VT)(qa[i]);              \
    c##i##_0 = fma(av, b0, c##i##_0); \
    c##i##_1 = fma(av, b1, c##i##_1); \
  }
#else
#define PSTEP(i)                      \
  {                                   \
    VT av = (VT)(qa[i]);              \
    c##i##_0 = fma(av, b0, c##i##_0); \
  }
#endif

__kernel __attribute__((reqd_work_group_size(GEMM_LX, GEMM_LY, 1))) void gemm_packed(
    gcptr ap, long ap_offset, gcptr bp, long bp_offset, gptr y, long y_offset, long m, long n,
    long k) {
  const long panel = get_global_id(0), block = get_global_id(1);
  if (panel * TN >= n || block * GEMM_TM >= m) return;
  __global const SX* qa = (__global const SX*)(ap + ap_offset) + block * k * GEMM_TM;
  __global const SX* qb = (__global const SX*)(bp + bp_offset) + panel * k * TN;
  ROWS(DECLARE)
  for (long kk = 0; kk < k; ++kk) {
    VT b0 = VLOAD(0, qb);
#if GEMM_NV == 2
    VT b1 = VLOAD(1, qb);
#endif
    ROWS(PSTEP)
    qa += GEMM_TM;
    qb += TN;
  }
  gptr py = y + y_offset;
  const long row = block * GEMM_TM, col = panel * TN;
  ROWS(STORE)
}
#endif
