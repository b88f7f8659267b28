// Reductions for one dtype X: one work-item per output element walks the
// reduced elements. The host describes the input as kept ("outer") and
// reduced ("inner") dimensions with their strides; the output is contiguous.
// Float sums accumulate in double where the device has it (the reference
// rounds once), integers wrap in their unsigned type.
typedef struct {
  long outer_rank;
  long outer_shape[MAX_DIMS];
  long outer_strides[MAX_DIMS];
  long inner_rank;
  long inner_shape[MAX_DIMS];
  long inner_strides[MAX_DIMS];
  long outer_n;
  long inner_n;
  long x_offset; /* bytes */
  long y_offset; /* bytes */
} red_t;

#ifdef IS_FLOAT
#ifdef X_F64
typedef double RACC;
#else
typedef acc_t RACC;
#endif
#define RADD(s, v) ((s) + (RACC)(v))
#define RMUL(s, v) ((s) * (RACC)(v))
#else
typedef UX RACC;
#define RADD(s, v) ((s) + (UX)(v))
#define RMUL(s, v) ((s) * (UX)(v))
#endif

inline long outer_base(const red_t* r, long o) {
  long base = 0;
  for (int d = (int)r->outer_rank - 1; d >= 0; --d) {
    long extent = r->outer_shape[d];
    base += (o % extent) * r->outer_strides[d];
    o /= extent;
  }
  return base;
}

// Walks the inner elements in row-major order with an odometer: |at| is the
// element offset of the current one.
#define FOR_INNER(r, base, at, BODY)                           \
  {                                                            \
    long idx_[MAX_DIMS] = {0, 0, 0, 0, 0, 0, 0, 0};            \
    long at = (base);                                          \
    for (long j_ = 0; j_ < (r)->inner_n; ++j_) {               \
      BODY;                                                    \
      for (int d_ = (int)(r)->inner_rank - 1; d_ >= 0; --d_) { \
        at += (r)->inner_strides[d_];                          \
        if (++idx_[d_] < (r)->inner_shape[d_]) break;          \
        at -= idx_[d_] * (r)->inner_strides[d_];               \
        idx_[d_] = 0;                                          \
      }                                                        \
    }                                                          \
  }

#ifndef IS_BOOL
__kernel void r_sum(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  RACC s = 0;
  FOR_INNER(&r, outer_base(&r, o), at, s = RADD(s, LD(in, at)))
  ST(y + r.y_offset, o, (CX)s);
}

__kernel void r_prod(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  RACC s = 1;
  FOR_INNER(&r, outer_base(&r, o), at, s = RMUL(s, LD(in, at)))
  ST(y + r.y_offset, o, (CX)s);
}

// NaN wins: once one is seen it is the result.
__kernel void r_max(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  CX best = LD(in, outer_base(&r, o));
  FOR_INNER(&r, outer_base(&r, o), at, {
    CX v = LD(in, at);
    if (best == best && (v != v || v > best)) best = v;
  })
  ST(y + r.y_offset, o, best);
}

__kernel void r_min(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  CX best = LD(in, outer_base(&r, o));
  FOR_INNER(&r, outer_base(&r, o), at, {
    CX v = LD(in, at);
    if (best == best && (v != v || v < best)) best = v;
  })
  ST(y + r.y_offset, o, best);
}

// First extreme wins; the first NaN counts as the extreme for both.
__kernel void r_argmax(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  long base = outer_base(&r, o);
  long stride = r.inner_rank > 0 ? r.inner_strides[0] : 0;
  CX best = LD(in, base);
  long where = 0;
  for (long j = 1; j < r.inner_n && best == best; ++j) {
    CX v = LD(in, base + j * stride);
    if (v != v || v > best) {
      best = v;
      where = j;
    }
  }
  st_i64(y + r.y_offset, o, where);
}

__kernel void r_argmin(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  long base = outer_base(&r, o);
  long stride = r.inner_rank > 0 ? r.inner_strides[0] : 0;
  CX best = LD(in, base);
  long where = 0;
  for (long j = 1; j < r.inner_n && best == best; ++j) {
    CX v = LD(in, base + j * stride);
    if (v != v || v < best) {
      best = v;
      where = j;
    }
  }
  st_i64(y + r.y_offset, o, where);
}
#endif

#ifdef IS_FLOAT
__kernel void r_mean(gcptr x, gptr y, red_t r) {
  long o = get_global_id(0);
  if (o >= r.outer_n) return;
  gcptr in = x + r.x_offset;
  RACC s = 0;
  FOR_INNER(&r, outer_base(&r, o), at, s = RADD(s, LD(in, at)))
  ST(y + r.y_offset, o, (CX)(s / (RACC)r.inner_n));
}
#endif
