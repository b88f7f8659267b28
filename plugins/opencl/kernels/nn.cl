// Neural-network kernels for one float dtype X. Tensors are contiguous
// (the core stages strided inputs); sums run in acc_t (double where the
// device has it) and each result is rounded once at the store.
#ifdef X_F64
typedef double WIDE;
#else
typedef acc_t WIDE;
#endif

// matmul: kernels/gemm.cl.

// ---- softmax / log_softmax along an axis: x is [outer, extent, inner] ------
__kernel void softmax(gcptr x, ulong xo, gptr y, ulong yo, long outer, long extent, long inner,
                      int take_log) {
  long i = get_global_id(0);
  if (i >= outer * inner) return;
  long base = (i / inner) * extent * inner + i % inner;
  gcptr in = x + xo;
  CX m = LD(in, base);
  for (long j = 1; j < extent; ++j) {
    CX v = LD(in, base + j * inner);
    m = (v > m || v != v) && m == m ? v : m;
  }
  WIDE s = 0;
  for (long j = 0; j < extent; ++j) s += (WIDE)exp(LD(in, base + j * inner) - m);
  CX log_sum = (CX)log(s);
  CX inverse = (CX)((WIDE)1 / s);
  for (long j = 0; j < extent; ++j) {
    CX v = LD(in, base + j * inner);
    ST(y + yo, base + j * inner, take_log ? v - m - log_sum : exp(v - m) * inverse);
  }
}

// ---- layer_norm / rms_norm over the last dimension ------------------------
__kernel void layer_norm(gcptr x, ulong xo, gcptr w, ulong wo, gcptr b, ulong bo, gptr y, ulong yo,
                         long rows, long dim, real_arg eps_in) {
  long r = get_global_id(0);
  if (r >= rows) return;
  gcptr in = x + xo;
  long base = r * dim;
  WIDE s = 0;
  for (long j = 0; j < dim; ++j) s += (WIDE)LD(in, base + j);
  WIDE mean = s / (WIDE)dim;
  WIDE v = 0;
  for (long j = 0; j < dim; ++j) {
    WIDE d = (WIDE)LD(in, base + j) - mean;
    v += d * d;
  }
  WIDE rstd = (WIDE)1 / sqrt(v / (WIDE)dim + (WIDE)eps_in);
  for (long j = 0; j < dim; ++j) {
    WIDE value = ((WIDE)LD(in, base + j) - mean) * rstd * (WIDE)LD(w + wo, j) + (WIDE)LD(b + bo, j);
    ST(y + yo, base + j, (CX)value);
  }
}

__kernel void rms_norm(gcptr x, ulong xo, gcptr w, ulong wo, gptr y, ulong yo, long rows, long dim,
                       real_arg eps_in) {
  long r = get_global_id(0);
  if (r >= rows) return;
  gcptr in = x + xo;
  long base = r * dim;
  WIDE s = 0;
  for (long j = 0; j < dim; ++j) {
    WIDE v = (WIDE)LD(in, base + j);
    s += v * v;
  }
  WIDE scale = (WIDE)1 / sqrt(s / (WIDE)dim + (WIDE)eps_in);
  for (long j = 0; j < dim; ++j) {
    ST(y + yo, base + j, (CX)((WIDE)LD(in, base + j) * scale * (WIDE)LD(w + wo, j)));
  }
}

// ---- batch_norm (inference): x is [N, C, inner] ---------------------------
__kernel void batch_norm(gcptr x, ulong xo, gcptr mean, ulong mo, gcptr var, ulong vo, gcptr w,
                         ulong wo, gcptr b, ulong bo, gptr y, ulong yo, long n, long channels,
                         long inner, real_arg eps_in) {
  long i = get_global_id(0);
  if (i >= n) return;
  long c = (i / inner) % channels;
  WIDE value = ((WIDE)LD(x + xo, i) - (WIDE)LD(mean + mo, c)) /
                   sqrt((WIDE)LD(var + vo, c) + (WIDE)eps_in) * (WIDE)LD(w + wo, c) +
               (WIDE)LD(b + bo, c);
  ST(y + yo, i, (CX)value);
}

// ---- conv2d (NCHW, groups, dilation) and pooling: one output each ---------
typedef struct {
  long n, c, h, w;        /* input */
  long o, kh, kw, oh, ow; /* output channels, kernel, output size */
  long sh, sw, ph, pw, dh, dw, groups;
  long has_bias, count_include_pad;
  long x_offset, w_offset, b_offset, y_offset; /* bytes */
} conv_t;

__kernel void conv2d(gcptr x, gcptr w, gcptr bias, gptr y, conv_t p) {
  long i = get_global_id(0);
  long total = p.n * p.o * p.oh * p.ow;
  if (i >= total) return;
  long oj = i % p.ow;
  long oi = (i / p.ow) % p.oh;
  long oc = (i / (p.ow * p.oh)) % p.o;
  long b = i / (p.ow * p.oh * p.o);
  long cg = p.c / p.groups;
  long g = oc / (p.o / p.groups);
  gcptr px = x + p.x_offset;
  gcptr pw = w + p.w_offset;
  WIDE s = p.has_bias ? (WIDE)LD(bias + p.b_offset, oc) : (WIDE)0;
  for (long c = 0; c < cg; ++c) {
    long xc = ((b * p.c) + g * cg + c) * p.h;
    long wc = ((oc * cg) + c) * p.kh;
    for (long q = 0; q < p.kh; ++q) {
      long r = oi * p.sh - p.ph + q * p.dh;
      if (r < 0 || r >= p.h) continue;
      for (long t = 0; t < p.kw; ++t) {
        long col = oj * p.sw - p.pw + t * p.dw;
        if (col < 0 || col >= p.w) continue;
        s += (WIDE)LD(px, (xc + r) * p.w + col) * (WIDE)LD(pw, (wc + q) * p.kw + t);
      }
    }
  }
  ST(y + p.y_offset, i, (CX)s);
}

// Only positions inside x count: padding never wins.
__kernel void max_pool2d(gcptr x, gptr y, conv_t p) {
  long i = get_global_id(0);
  if (i >= p.n * p.c * p.oh * p.ow) return;
  long oj = i % p.ow;
  long oi = (i / p.ow) % p.oh;
  long plane = i / (p.ow * p.oh);
  gcptr px = x + p.x_offset;
  CX best = 0;
  bool any = false;
  for (long q = 0; q < p.kh; ++q) {
    long r = oi * p.sh - p.ph + q;
    if (r < 0 || r >= p.h) continue;
    for (long t = 0; t < p.kw; ++t) {
      long col = oj * p.sw - p.pw + t;
      if (col < 0 || col >= p.w) continue;
      CX v = LD(px, (plane * p.h + r) * p.w + col);
      if (!any || (best == best && (v != v || v > best))) best = v;
      any = true;
    }
  }
  ST(y + p.y_offset, i, best);
}

__kernel void avg_pool2d(gcptr x, gptr y, conv_t p) {
  long i = get_global_id(0);
  if (i >= p.n * p.c * p.oh * p.ow) return;
  long oj = i % p.ow;
  long oi = (i / p.ow) % p.oh;
  long plane = i / (p.ow * p.oh);
  gcptr px = x + p.x_offset;
  WIDE s = 0;
  long inside = 0;
  for (long q = 0; q < p.kh; ++q) {
    long r = oi * p.sh - p.ph + q;
    if (r < 0 || r >= p.h) continue;
    for (long t = 0; t < p.kw; ++t) {
      long col = oj * p.sw - p.pw + t;
      if (col < 0 || col >= p.w) continue;
      s += (WIDE)LD(px, (plane * p.h + r) * p.w + col);
      ++inside;
    }
  }
  long count = p.count_include_pad ? p.kh * p.kw : inside;
  ST(y + p.y_offset, i, (CX)(s / (WIDE)count));
}

// ---- scaled_dot_product_attention: one (batch, query, value column) each --
__kernel void attention(gcptr q, ulong qo, gcptr k, ulong ko, gcptr v, ulong vo, gptr y, ulong yo,
                        long batch, long lq, long lk, long d, long dv, real_arg scale_in,
                        int causal) {
  long i = get_global_id(0);
  if (i >= batch * lq * dv) return;
  long c = i % dv;
  long row = (i / dv) % lq;
  long b = i / (dv * lq);
  // causal 1: bottom-right aligned (row sees keys <= row + lk - lq); 2: top-left.
  long visible = causal ? min(lk, row + (causal == 1 ? lk - lq : 0) + 1) : lk;
  if (visible <= 0) {
    ST(y + yo, i, (CX)0);
    return;
  }
  WIDE scale = (WIDE)scale_in;
  gcptr pq = q + qo;
  gcptr pk = k + ko;
  gcptr pv = v + vo;
  long qbase = (b * lq + row) * d;
  WIDE m = 0;
  for (long j = 0; j < visible; ++j) {
    WIDE s = 0;
    for (long t = 0; t < d; ++t) s += (WIDE)LD(pq, qbase + t) * (WIDE)LD(pk, (b * lk + j) * d + t);
    s *= scale;
    m = (j == 0 || s > m || s != s) && m == m ? s : m;
  }
  WIDE total = 0;
  WIDE out = 0;
  for (long j = 0; j < visible; ++j) {
    WIDE s = 0;
    for (long t = 0; t < d; ++t) s += (WIDE)LD(pq, qbase + t) * (WIDE)LD(pk, (b * lk + j) * d + t);
    WIDE e = exp(s * scale - m);
    total += e;
    out += e * (WIDE)LD(pv, (b * lk + j) * dv + c);
  }
  ST(y + yo, i, (CX)(out / total));
}

// ---- rotary_embedding: x is [rows, S, D]; cos/sin are [S, D/2] -------------
// |inverse| rotates by -angle: rotary_embedding_grad (the transposed rotation).
__kernel void rotary(gcptr x, ulong xo, gcptr cs, ulong co, gcptr sn, ulong so, gptr y, ulong yo,
                     long n, long seq, long dim, int interleaved, int inverse) {
  long i = get_global_id(0);
  if (i >= n) return;
  long e = i % dim;
  long s = (i / dim) % seq;
  long base = i - e;
  long half_dim = dim / 2;
  long pair, first, second;
  bool is_first;
  if (interleaved) {
    pair = e / 2;
    first = base + 2 * pair;
    second = first + 1;
    is_first = (e % 2) == 0;
  } else {
    pair = e < half_dim ? e : e - half_dim;
    first = base + pair;
    second = first + half_dim;
    is_first = e < half_dim;
  }
  WIDE x1 = (WIDE)LD(x + xo, first);
  WIDE x2 = (WIDE)LD(x + xo, second);
  WIDE c = (WIDE)LD(cs + co, s * half_dim + pair);
  WIDE sv = (WIDE)LD(sn + so, s * half_dim + pair);
  if (inverse) sv = -sv;
  ST(y + yo, i, (CX)(is_first ? x1 * c - x2 * sv : x2 * c + x1 * sv));
}

// ---- cross_entropy: per row loss; mode 0 none, 1 sum, 2 mean --------------
#define CROSS_ENTROPY(I)                                                                     \
  __kernel void cross_entropy_##I(gcptr logits, ulong lo, gcptr target, ulong to, gptr loss, \
                                  ulong out_offset, long rows, long classes, int mode,       \
                                  __global long* error) {                                     \
    long i = get_global_id(0);                                                               \
    long first = mode == 0 ? i : 0;                                                          \
    long last = mode == 0 ? i + 1 : rows;                                                    \
    if (mode == 0 ? i >= rows : i > 0) return;                                               \
    gcptr in = logits + lo;                                                                  \
    WIDE total = 0;                                                                          \
    for (long r = first; r < last; ++r) {                                                    \
      long t = (long)ld_##I(target + to, r);                                                 \
      if (t < 0 || t >= classes) {                                                           \
        index_error(error, 4, t, classes);                                                   \
        total = NAN;                                                                         \
        continue;                                                                            \
      }                                                                                      \
      long base = r * classes;                                                               \
      WIDE m = (WIDE)LD(in, base);                                                           \
      for (long j = 1; j < classes; ++j) {                                                   \
        WIDE v = (WIDE)LD(in, base + j);                                                     \
        m = (v > m || v != v) && m == m ? v : m;                                             \
      }                                                                                      \
      WIDE s = 0;                                                                            \
      for (long j = 0; j < classes; ++j) s += exp((WIDE)LD(in, base + j) - m);               \
      total += m + log(s) - (WIDE)LD(in, base + t);                                          \
    }                                                                                        \
    if (mode == 2) total /= (WIDE)rows;                                                      \
    ST(loss + out_offset, mode == 0 ? i : 0, (CX)total);                                     \
  }
CROSS_ENTROPY(i32)
CROSS_ENTROPY(i64)
