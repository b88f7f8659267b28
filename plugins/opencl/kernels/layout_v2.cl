// OpenCL C kernels of the operator set v2 creation and layout operators for one dtype (see common.cl).
// flip and expand are copies between views (layout.cc's copy_view); only
// tril/triu need a kernel of their own.

// ---- tril / triu over contiguous x and y ----------------------------------
// Element i sits in column i % cols of row (i / cols) % rows of its matrix;
// it is kept when column - row is on the kept side of |diagonal| (which the
// host clamped to [-rows, cols]), else stored as 0 (+0, 0 or false).
__kernel void triangle(gcptr x, ulong xo, gptr y, ulong yo, long n, long cols, long rows,
                       long diagonal, int lower) {
  long i = get_global_id(0);
  if (i >= n) return;
  long d = i % cols - (i / cols) % rows;
  int keep = lower ? d <= diagonal : d >= diagonal;
  ((__global SX*)(y + yo))[i] = keep ? ((__global const SX*)(x + xo))[i] : (SX)0;
}

// ---- one_hot: y[p, c] = index[p] == c, an index outside [0, classes) raises
// the stream's flag -----------------------------------------------------------
#define ONE_HOT(I)                                                                             \
  __kernel void one_hot_##I(gcptr index, ulong io, gptr y, ulong yo, long n, long classes,     \
                            __global long* error) {                                             \
    long i = get_global_id(0);                                                                 \
    if (i >= n) return;                                                                        \
    long k = (long)ld_##I(index + io, i / classes);                                            \
    if (k < 0 || k >= classes) {                                                               \
      index_error(error, 7, k, classes);                                                       \
      ST(y + yo, i, (CX)0);                                                                    \
      return;                                                                                  \
    }                                                                                          \
    ST(y + yo, i, (CX)(k == i % classes ? 1 : 0));                                             \
  }
ONE_HOT(i32)
ONE_HOT(i64)

// ---- scatter / scatter_add: one work-item per line of index along the axis
// (g: index's shape with the axis extent 1, strides[0] of y, strides[1] of
// index and src, offsets[0..2] of y, index, src), in index order along the
// line; an index outside [0, bound) raises the stream's flag --------------
#define SCATTER(I)                                                                             \
  __kernel void scatter_##I(gcptr index, gcptr src, gptr y, geo_t g, long along,              \
                            long index_step, long y_step, long bound, int add,                 \
                            __global long* error) {                                             \
    long l = get_global_id(0);                                                                 \
    if (l >= g.numel) return;                                                                  \
    long o[2];                                                                                 \
    geo_offsets(&g, l, 2, o);                                                                  \
    gptr yb = y + g.offsets[0];                                                                \
    gcptr sb = src + g.offsets[2];                                                             \
    for (long j = 0; j < along; ++j) {                                                         \
      long ii = o[1] + j * index_step;                                                         \
      long k = (long)ld_##I(index + g.offsets[1], ii);                                         \
      if (k < 0 || k >= bound) {                                                               \
        index_error(error, add ? 9 : 8, k, bound);                                             \
        continue;                                                                              \
      }                                                                                        \
      long q = o[0] + k * y_step;                                                              \
      if (add) {                                                                               \
        ST(yb, q, (CX)((UX)LD(yb, q) + (UX)LD(sb, ii)));                                       \
      } else {                                                                                 \
        ((__global SX*)yb)[q] = ((__global const SX*)sb)[ii];                                  \
      }                                                                                        \
    }                                                                                          \
  }
SCATTER(i32)
SCATTER(i64)

// ---- arange: y[i] = start + i * step -----------------------------------------
// One fma in f32 (f16, bf16, f32) or f64, rounded once when stored; integers
// in wrapping 64-bit arithmetic from the host's integer start and step.
__kernel void arange(gptr y, ulong yo, long n, float fstart, float fstep, real_arg start,
                     real_arg step, long istart, long istep) {
  long i = get_global_id(0);
  if (i >= n) return;
#if defined(IS_INT)
  ST(y + yo, i, (CX)(long)((ulong)istart + (ulong)i * (ulong)istep));
#elif defined(X_F64)
  ST(y + yo, i, fma((double)i, (double)step, (double)start));
#else
  ST(y + yo, i, fma((float)i, fstep, fstart));
#endif
}
