// OpenCL C kernels of the operator set v2 math operators for one dtype (see common.cl).
// Every kernel is elementwise over the output's shape: tensor 0 of geo_t is
// the output, 1.. the inputs broadcast to it (stride 0 on stretched dimensions).

#define MAP2(name, expr)                                     \
  __kernel void name(gcptr a, gcptr b, gptr y, geo_t g) {    \
    long i = get_global_id(0);                               \
    if (i >= g.numel) return;                                \
    long o[3];                                               \
    geo_offsets(&g, i, 3, o);                                \
    CX p = LD(a + g.offsets[1], o[1]);                       \
    CX q = LD(b + g.offsets[2], o[2]);                       \
    ST(y + g.offsets[0], o[0], (expr));                      \
  }

#define MAP1(name, expr)                                     \
  __kernel void name(gcptr a, gptr y, geo_t g) {             \
    long i = get_global_id(0);                               \
    if (i >= g.numel) return;                                \
    long o[2];                                               \
    geo_offsets(&g, i, 2, o);                                \
    CX p = LD(a + g.offsets[1], o[1]);                       \
    ST(y + g.offsets[0], o[0], (expr));                      \
  }

#ifndef IS_BOOL
// ---- clip: min(max(x, lo), hi); a NaN operand gives NaN -------------------
inline CX clip_of(CX x, CX lo, CX hi) {
#ifdef IS_FLOAT
  if (x != x) return x;
  if (lo != lo) return lo;
  if (hi != hi) return hi;
#endif
  CX low = x < lo ? lo : x;
  return low > hi ? hi : low;
}

__kernel void m_clip(gcptr x, gcptr lo, gcptr hi, gptr y, geo_t g) {
  long i = get_global_id(0);
  if (i >= g.numel) return;
  long o[4];
  geo_offsets(&g, i, 4, o);
  ST(y + g.offsets[0], o[0],
     clip_of(LD(x + g.offsets[1], o[1]), LD(lo + g.offsets[2], o[2]), LD(hi + g.offsets[3], o[3])));
}

// ---- fmod (C: the sign of a) and remainder (Python: the sign of b) ---------
#ifdef IS_FLOAT
// OpenCL's fmod is exact (0 ulp), as C's.
inline CX fmod_of(CX a, CX b) { return fmod(a, b); }
#else
// |a| mod |b| in the unsigned type: b = 0 gives 0, and INT_MIN % -1 is 0.
inline CX fmod_of(CX a, CX b) {
  if (b == 0) return 0;
  UX ua = a < 0 ? (UX)0 - (UX)a : (UX)a;
  UX ub = b < 0 ? (UX)0 - (UX)b : (UX)b;
  UX r = ua % ub;
  return a < 0 ? (CX)((UX)0 - r) : (CX)r;
}
#endif

inline CX remainder_of(CX a, CX b) {
  CX r = fmod_of(a, b);
#ifdef IS_FLOAT
  if (r == 0) return copysign((CX)0, b);
#endif
  if (r != 0 && (r < 0) != (b < 0)) r += b;
  return r;
}

MAP2(m_fmod, fmod_of(p, q))
MAP2(m_remainder, remainder_of(p, q))

// ---- cumsum and cumprod: one work-item per row along the axis -------------
// x and y are contiguous; row r starts at (r / after) * len * after + r % after
// and steps by |after|. Float sums are compensated (Kahan) in acc_t, so that a
// device without fp64 stays within the accumulate tolerance over long rows;
// an infinite partial sum drops the compensation (inf - inf would be NaN).
// Integers wrap in the unsigned type.
__kernel void m_scan(gcptr x, ulong xo, gptr y, ulong yo, long rows, long len, long after,
                     int product, int exclusive, int reverse) {
  long r = get_global_id(0);
  if (r >= rows) return;
  long base = r / after * len * after + r % after;
#ifdef IS_FLOAT
  acc_t acc = product ? (acc_t)1 : (acc_t)0;
  acc_t comp = 0;
#else
  UX acc = product ? (UX)1 : (UX)0;
#endif
  for (long k = 0; k < len; ++k) {
    long i = base + (reverse ? len - 1 - k : k) * after;
#ifdef IS_FLOAT
    acc_t v = (acc_t)LD(x + xo, i);
    acc_t next;
    if (product) {
      next = acc * v;
    } else {
      acc_t term = v - comp;
      next = acc + term;
      comp = isinf(next) ? (acc_t)0 : (next - acc) - term;
    }
    ST(y + yo, i, (CX)(exclusive ? acc : next));
#else
    UX v = (UX)LD(x + xo, i);
    UX next = product ? acc * v : acc + v;
    ST(y + yo, i, (CX)(exclusive ? acc : next));
#endif
    acc = next;
  }
}
#endif

#ifdef IS_FLOAT
// ---- logsumexp: one work-item per output ----------------------------------
// Mirrors red_t of kernels/math_v2.cc: the kept and the reduced dimensions of
// contiguous x, innermost first, with their strides in elements.
typedef struct {
  long kept, reduced, kept_count, reduced_count;
  long kept_shape[MAX_DIMS], kept_strides[MAX_DIMS];
  long reduced_shape[MAX_DIMS], reduced_strides[MAX_DIMS];
} red_t;

inline long red_offset(long linear, long n, const long* shape, const long* strides) {
  long offset = 0;
  for (long d = 0; d < n; ++d) {
    offset += linear % shape[d] * strides[d];
    linear /= shape[d];
  }
  return offset;
}

// NaN if any element is NaN; the maximum if it is infinite (all -inf, or no
// element: -inf); else m + log(sum(exp(x - m))).
__kernel void m_logsumexp(gcptr x, ulong xo, gptr y, ulong yo, red_t g) {
  long o = get_global_id(0);
  if (o >= g.kept_count) return;
  long base = red_offset(o, g.kept, g.kept_shape, g.kept_strides);
  acc_t m = -INFINITY;
  int nan = 0;
  for (long r = 0; r < g.reduced_count; ++r) {
    acc_t v = LD(x + xo, base + red_offset(r, g.reduced, g.reduced_shape, g.reduced_strides));
    nan |= v != v;
    m = v > m ? v : m;
  }
  acc_t result = m;
  if (nan) {
    result = NAN;
  } else if (!isinf(m)) {
    acc_t sum = 0;
    for (long r = 0; r < g.reduced_count; ++r) {
      sum += exp(LD(x + xo, base + red_offset(r, g.reduced, g.reduced_shape, g.reduced_strides)) -
                 m);
    }
    result = m + log(sum);
  }
  ST(y + yo, o, (CX)result);
}
#endif

#ifndef IS_BOOL
// ---- sort, argsort, topk: one work-item per element ------------------------
// Its rank in its row is the number of elements ordered before it (NaN above
// everything, equal values by index); the element goes to that position if
// it is below k. x is contiguous: row r starts at (r / after) * n * after +
// r % after and steps by |after|; the outputs have k along the axis.
inline bool below(CX p, CX q) {
#ifdef IS_FLOAT
  return p == p && (q != q || p < q);
#else
  return p < q;
#endif
}

__kernel void m_rank(gcptr x, ulong xo, gptr v, ulong vo, gptr ind, ulong io, long total, long n,
                     long after, long k, int descending, int values) {
  long e = get_global_id(0);
  if (e >= total) return;
  long r = e / n, i = e % n;
  long base = r / after * n * after + r % after;
  CX p = LD(x + xo, base + i * after);
  long rank = 0;
  for (long j = 0; j < n; ++j) {
    CX q = LD(x + xo, base + j * after);
    bool before = descending ? below(p, q) : below(q, p);
    bool tie = !below(p, q) && !below(q, p);
    rank += (before || (tie && j < i)) ? 1 : 0;
  }
  if (rank >= k) return;
  long o = r / after * k * after + r % after + rank * after;
  if (values) ((__global SX*)(v + vo))[o] = ((__global const SX*)(x + xo))[base + i * after];
  st_i64(ind + io, o, i);
}
#endif

// ---- logical (bool) and bitwise (integers, bool) --------------------------
#ifndef IS_FLOAT
// bool loads as 0/1 whatever the stored byte, so & | ^ are the truth tables.
MAP2(m_and, (p & q))
MAP2(m_or, (p | q))
MAP2(m_xor, (p ^ q))
#ifdef IS_BOOL
MAP1(m_not, (p == 0))
#else
MAP1(m_not, (~p))
#endif
#endif
