// Elementwise, comparison, where, cast, copy and indexing kernels for one
// dtype X (see common.cl). Inputs of every kernel but the strided ones are
// contiguous (the core stages strided inputs through copy); "_c" kernels take
// n contiguous elements, "_s" kernels a geo_t with broadcast strides.

// ---- unary: y = f(x) -------------------------------------------------------
#define UNARY(name, expr)                                           \
  __kernel void name(gcptr a, ulong ao, gptr y, ulong yo, long n) { \
    long i = get_global_id(0);                                      \
    if (i >= n) return;                                             \
    CX x = LD(a + ao, i);                                           \
    ST(y + yo, i, (expr));                                          \
  }

#ifdef IS_INT
// Integers wrap: negate in the unsigned type, where overflow is defined.
#define NEG(x) ((CX)(-(UX)(x)))
#else
#define NEG(x) (-(x))
#endif

#ifndef IS_BOOL
UNARY(u_neg, NEG(x))
UNARY(u_abs, (x < (CX)0 ? NEG(x) : x))
// NaN < 0 is false, so NaN passes through.
UNARY(u_relu, (x < (CX)0 ? (CX)0 : x))
#endif

#ifdef IS_FLOAT
UNARY(u_exp, exp(x))
UNARY(u_log, log(x))
UNARY(u_sqrt, sqrt(x))
UNARY(u_rsqrt, (CX)1 / sqrt(x))
UNARY(u_sin, sin(x))
UNARY(u_cos, cos(x))
UNARY(u_tanh, tanh(x))
UNARY(u_sigmoid, (CX)1 / ((CX)1 + exp(-x)))
UNARY(u_gelu, (CX)0.5 * x * ((CX)1 + erf(x * (CX)0.70710678118654752440)))
// 0.5 x (1 + tanh(u)) as x / (1 + e^-2u): the same value, but exactly 0 (and
// NaN at -inf) where tanh(u) is -1, even with a tanh that stops an ulp short.
UNARY(u_gelu_tanh,
      x / ((CX)1 + exp((CX)-1.59576912160573071176 * (x + (CX)0.044715 * x * x * x))))
UNARY(u_silu, x*((CX)1 / ((CX)1 + exp(-x))))
UNARY(u_erf, erf(x))
UNARY(u_floor, floor(x))
UNARY(u_ceil, ceil(x))
UNARY(u_reciprocal, (CX)1 / x)
#endif

// ---- binary and compare: contiguous same-shape (_c) and broadcast (_s) ----
#define BINARY(name, STORE, expr)                                                          \
  __kernel void name##_c(gcptr a, ulong ao, gcptr b, ulong bo, gptr y, ulong yo, long n) { \
    long i = get_global_id(0);                                                             \
    if (i >= n) return;                                                                    \
    CX p = LD(a + ao, i);                                                                  \
    CX q = LD(b + bo, i);                                                                  \
    STORE(y + yo, i, (expr));                                                              \
  }                                                                                        \
  __kernel void name##_s(gcptr a, gcptr b, gptr y, geo_t g) {                              \
    long i = get_global_id(0);                                                             \
    if (i >= g.numel) return;                                                              \
    long o[3];                                                                             \
    geo_offsets(&g, i, 3, o);                                                              \
    CX p = LD(a + g.offsets[1], o[1]);                                                     \
    CX q = LD(b + g.offsets[2], o[2]);                                                     \
    STORE(y + g.offsets[0], o[0], (expr));                                                 \
  }

#ifndef IS_BOOL
#ifdef IS_INT
#define ADD(p, q) ((CX)((UX)(p) + (UX)(q)))
#define SUB(p, q) ((CX)((UX)(p) - (UX)(q)))
#define MUL(p, q) ((CX)((UX)(p) * (UX)(q)))
#else
#define ADD(p, q) ((p) + (q))
#define SUB(p, q) ((p) - (q))
#define MUL(p, q) ((p) * (q))
#endif
BINARY(b_add, ST, ADD(p, q))
BINARY(b_sub, ST, SUB(p, q))
BINARY(b_mul, ST, MUL(p, q))
// A NaN operand wins (p != p only for NaN).
BINARY(b_maximum, ST, (p != p ? p : (q != q ? q : (p > q ? p : q))))
BINARY(b_minimum, ST, (p != p ? p : (q != q ? q : (p < q ? p : q))))
BINARY(c_lt, st_bool, (p < q))
BINARY(c_le, st_bool, (p <= q))
BINARY(c_gt, st_bool, (p > q))
BINARY(c_ge, st_bool, (p >= q))
#endif
#ifdef IS_FLOAT
BINARY(b_div, ST, (p / q))
BINARY(b_pow, ST, pow(p, q))
#endif
BINARY(c_eq, st_bool, (p == q))
BINARY(c_ne, st_bool, (p != q))

// ---- where: the chosen element is copied bit for bit ----------------------
__kernel void where_s(gcptr c, gcptr a, gcptr b, gptr y, geo_t g) {
  long i = get_global_id(0);
  if (i >= g.numel) return;
  long o[4];
  geo_offsets(&g, i, 4, o);
  bool pick = ld_bool(c + g.offsets[1], o[1]);
  __global const SX* from = pick ? (__global const SX*)(a + g.offsets[2]) + o[2]
                                 : (__global const SX*)(b + g.offsets[3]) + o[3];
  ((__global SX*)(y + g.offsets[0]))[o[0]] = *from;
}

// ---- copy: any strides in and out, bit-exact ------------------------------
// Also serves transpose, slice and concat, which are copies between views.
__kernel void copy_s(gcptr x, gptr y, geo_t g) {
  long i = get_global_id(0);
  if (i >= g.numel) return;
  long o[2];
  geo_offsets(&g, i, 2, o);
  ((__global SX*)(y + g.offsets[0]))[o[0]] = ((__global const SX*)(x + g.offsets[1]))[o[1]];
}

// ---- cast from X to every dtype -------------------------------------------
// Narrowing to f16/bf16 from a type wider than float rounds through
// round-to-odd so that the value is rounded once (docs/ops.md, cast).
#if defined(X_F64)
#define NARROW(v) odd_from_double(v)
#elif defined(X_I32) || defined(X_I64)
#define NARROW(v) odd_from_long((long)(v))
#else
#define NARROW(v) (v)
#endif
#define CAST(Y, cvt)                                                       \
  __kernel void cast_to_##Y(gcptr a, ulong ao, gptr y, ulong yo, long n) { \
    long i = get_global_id(0);                                             \
    if (i >= n) return;                                                    \
    CX v = LD(a + ao, i);                                                  \
    st_##Y(y + yo, i, cvt(v));                                             \
  }
#define PLAIN(v) (v)
#define TO_BOOL(v) ((v) != (CX)0)
CAST(f16, NARROW)
CAST(bf16, NARROW)
CAST(f32, PLAIN)
#ifdef OAR_HAS_FP64
CAST(f64, PLAIN)
#endif
CAST(i32, PLAIN)
CAST(i64, PLAIN)
CAST(bool, TO_BOOL)
// To the narrow integers: floats truncate toward zero (out of range is
// unspecified), integers keep the low bits (st_* takes a long).
CAST(i8, PLAIN)
CAST(u8, PLAIN)
CAST(i16, PLAIN)

// ---- matmul_w8: y[r, n] = scale[n] * sum_k x[r, k] * weight[n, k] -------
// One work-item per output; weight is i8 [N, K]; the sum is acc_t (double
// where the device has it), rounded once at the store.
#ifdef IS_FLOAT
__kernel void matmul_w8(gcptr x, ulong xo, gcptr w, ulong wo, gcptr s, ulong so, gptr y, ulong yo,
                        long n_out, long k_len, long total) {
  long i = get_global_id(0);
  if (i >= total) return;
  long r = i / n_out, n = i % n_out;
  __global const char* wr = (__global const char*)(w + wo) + n * k_len;
  acc_t acc = 0;
  for (long k = 0; k < k_len; ++k) acc += (acc_t)LD(x + xo, r * k_len + k) * (acc_t)wr[k];
  ST(y + yo, i, (CX)(acc * (acc_t)LD(s + so, n)));
}
#endif

// ---- indexing: an index outside [0, extent) raises the stream's flag ------
#define INDEXED(I)                                                                            \
  /* y[o, j, k] = x[o, index[j], k] */                                                        \
  __kernel void index_select_##I(gcptr x, ulong xo, gcptr index, ulong io, gptr y, ulong yo,  \
                                 long outer, long m, long inner, long extent,                 \
                                 __global long* error) {                                       \
    long i = get_global_id(0);                                                                \
    if (i >= outer * m * inner) return;                                                       \
    long k = i % inner;                                                                       \
    long j = (i / inner) % m;                                                                 \
    long o = i / (inner * m);                                                                 \
    long at = (long)ld_##I(index + io, j);                                                    \
    __global SX* out = (__global SX*)(y + yo);                                                \
    if (at < 0 || at >= extent) {                                                             \
      index_error(error, 1, at, extent);                                                      \
      out[i] = 0;                                                                             \
      return;                                                                                 \
    }                                                                                         \
    out[i] = ((__global const SX*)(x + xo))[(o * extent + at) * inner + k];                   \
  }                                                                                           \
  /* y[p] = x[p with p[axis] = index[p]]; g: shape of index, strides[1] of x with */          \
  /* the axis stride 0, |axis_stride| the x stride along axis */                              \
  __kernel void gather_##I(gcptr x, gcptr index, ulong io, gptr y, geo_t g, long axis_stride, \
                           long extent, __global long* error) {                                \
    long i = get_global_id(0);                                                                \
    if (i >= g.numel) return;                                                                 \
    long o[2];                                                                                \
    geo_offsets(&g, i, 2, o);                                                                 \
    long at = (long)ld_##I(index + io, i);                                                    \
    __global SX* out = (__global SX*)(y + g.offsets[0]);                                      \
    if (at < 0 || at >= extent) {                                                             \
      index_error(error, 2, at, extent);                                                      \
      out[o[0]] = 0;                                                                          \
      return;                                                                                 \
    }                                                                                         \
    out[o[0]] = ((__global const SX*)(x + g.offsets[1]))[o[1] + at * axis_stride];            \
  }                                                                                           \
  /* y[p, d] = weight[index[p], d] */                                                         \
  __kernel void embedding_##I(gcptr w, ulong wo, gcptr index, ulong io, gptr y, ulong yo,     \
                              long count, long dim, long rows, __global long* error) {         \
    long i = get_global_id(0);                                                                \
    if (i >= count * dim) return;                                                             \
    long d = i % dim;                                                                         \
    long at = (long)ld_##I(index + io, i / dim);                                              \
    __global SX* out = (__global SX*)(y + yo);                                                \
    if (at < 0 || at >= rows) {                                                               \
      index_error(error, 3, at, rows);                                                        \
      out[i] = 0;                                                                             \
      return;                                                                                 \
    }                                                                                         \
    out[i] = ((__global const SX*)(w + wo))[at * dim + d];                                    \
  }
INDEXED(i32)
INDEXED(i64)
