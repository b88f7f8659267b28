// OpenCL C kernels of the gradients of the normalizations, conv2d, pooling and attention for one
// dtype X (see common.cl). Tensors are contiguous; sums run in WIDE (double where the device has
// it, and for f64) and each result is rounded once at the store.
#ifdef X_F64
typedef double WIDE;
#else
typedef acc_t WIDE;
#endif

// ---- layer_norm_grad / rms_norm_grad ---------------------------------------
// One work-item per row: mean and rstd of the row (kept in |stats| for the
// column pass), then dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with
// g = dy * weight (rms: no mean(g) term and a mean held at 0).
__kernel void norm_grad_rows(gcptr dy, ulong dyo, gcptr x, ulong xo, gcptr w, ulong wo, gptr dx,
                             ulong dxo, gptr stats, ulong so, long rows, long dim,
                             real_arg eps_in, int rms) {
  long r = get_global_id(0);
  if (r >= rows) return;
  gcptr px = x + xo;
  gcptr pg = dy + dyo;
  gcptr pw = w + wo;
  long base = r * dim;
  WIDE mean = 0;
  if (!rms) {
    for (long j = 0; j < dim; ++j) mean += (WIDE)LD(px, base + j);
    mean /= (WIDE)dim;
  }
  WIDE var = 0;
  for (long j = 0; j < dim; ++j) {
    WIDE d = (WIDE)LD(px, base + j) - mean;
    var += d * d;
  }
  WIDE rstd = (WIDE)1 / sqrt(var / (WIDE)dim + (WIDE)eps_in);
  WIDE mean_g = 0, mean_gx = 0;
  for (long j = 0; j < dim; ++j) {
    WIDE g = (WIDE)LD(pg, base + j) * (WIDE)LD(pw, j);
    mean_g += g;
    mean_gx += g * ((WIDE)LD(px, base + j) - mean) * rstd;
  }
  mean_g = rms ? (WIDE)0 : mean_g / (WIDE)dim;
  mean_gx /= (WIDE)dim;
  for (long j = 0; j < dim; ++j) {
    WIDE g = (WIDE)LD(pg, base + j) * (WIDE)LD(pw, j);
    WIDE xhat = ((WIDE)LD(px, base + j) - mean) * rstd;
    ST(dx + dxo, base + j, (CX)(rstd * (g - mean_g - xhat * mean_gx)));
  }
  __global WIDE* st = (__global WIDE*)(stats + so);
  st[2 * r] = mean;
  st[2 * r + 1] = rstd;
}

// One work-item per column j: dweight[j] = sum_r dy * xhat, dbias[j] = sum_r dy.
__kernel void norm_grad_columns(gcptr dy, ulong dyo, gcptr x, ulong xo, gcptr stats, ulong so,
                                gptr dw, ulong dwo, gptr db, ulong dbo, long rows, long dim,
                                int rms) {
  long j = get_global_id(0);
  if (j >= dim) return;
  gcptr px = x + xo;
  gcptr pg = dy + dyo;
  __global const WIDE* st = (__global const WIDE*)(stats + so);
  WIDE sum_w = 0, sum_b = 0;
  for (long r = 0; r < rows; ++r) {
    WIDE g = (WIDE)LD(pg, r * dim + j);
    sum_w += g * ((WIDE)LD(px, r * dim + j) - st[2 * r]) * st[2 * r + 1];
    sum_b += g;
  }
  ST(dw + dwo, j, (CX)sum_w);
  if (!rms) ST(db + dbo, j, (CX)sum_b);
}

// ---- max_pool2d_grad / avg_pool2d_grad: one work-item per element of dx ----
// Element (plane, h, w) sums dy over the windows that hold it: max only those
// whose first maximum (row-major over in-bounds positions, a NaN counting as
// the maximum) it is; avg dy / divisor of each.
typedef struct {
  long planes, h, w, oh, ow, kh, kw, sh, sw, ph, pw;
  long is_max, count_include_pad;
  long dy_offset, x_offset, dx_offset; /* bytes */
} pool_grad_t;

__kernel void pool2d_grad(gcptr dy, gcptr x, gptr dx, pool_grad_t p) {
  long i = get_global_id(0);
  if (i >= p.planes * p.h * p.w) return;
  long col = i % p.w;
  long row = (i / p.w) % p.h;
  long plane = i / (p.w * p.h);
  gcptr px = x + p.x_offset + plane * p.h * p.w * (long)sizeof(SX);
  gcptr pg = dy + p.dy_offset + plane * p.oh * p.ow * (long)sizeof(SX);
  long oh_low = row + p.ph - p.kh + 1, ow_low = col + p.pw - p.kw + 1;
  long oh_begin = oh_low <= 0 ? 0 : (oh_low + p.sh - 1) / p.sh;
  long ow_begin = ow_low <= 0 ? 0 : (ow_low + p.sw - 1) / p.sw;
  long oh_end = min((row + p.ph) / p.sh + 1, p.oh);
  long ow_end = min((col + p.pw) / p.sw + 1, p.ow);
  WIDE acc = 0;
  for (long oh = oh_begin; oh < oh_end; ++oh) {
    long h0 = oh * p.sh - p.ph;
    long h_begin = max(h0, 0L), h_end = min(h0 + p.kh, p.h);
    for (long ow = ow_begin; ow < ow_end; ++ow) {
      long w0 = ow * p.sw - p.pw;
      long w_begin = max(w0, 0L), w_end = min(w0 + p.kw, p.w);
      WIDE g = (WIDE)LD(pg, oh * p.ow + ow);
      if (p.is_max) {
        long best = h_begin * p.w + w_begin;
        CX best_value = LD(px, best);
        for (long h = h_begin; h < h_end && best_value == best_value; ++h) {
          for (long w = w_begin; w < w_end; ++w) {
            CX v = LD(px, h * p.w + w);
            if (v != v || v > best_value) {
              best = h * p.w + w;
              best_value = v;
              if (v != v) break;
            }
          }
        }
        if (best == row * p.w + col) acc += g;
      } else {
        long count = p.count_include_pad ? p.kh * p.kw : (h_end - h_begin) * (w_end - w_begin);
        acc += g / (WIDE)count;
      }
    }
  }
  ST(dx + p.dx_offset, i, (CX)acc);
}

// ---- conv2d_grad_input / conv2d_grad_weight: one work-item per result -----
typedef struct {
  long n, c, h, w, o, kh, kw, oh, ow, groups;
  long sh, sw, ph, pw, dh, dw;
  long dy_offset, in_offset, out_offset; /* bytes: dy, weight or x, the result */
} conv_grad_t;

// dx[n, ci, h, w]: the group's output channels and the taps whose output
// position lands on (h, w), dy * weight.
__kernel void conv2d_grad_input(gcptr dy, gcptr weight, gptr dx, conv_grad_t p) {
  long i = get_global_id(0);
  if (i >= p.n * p.c * p.h * p.w) return;
  long cg = p.c / p.groups, og = p.o / p.groups;
  long col = i % p.w, row = (i / p.w) % p.h, ci = (i / (p.w * p.h)) % p.c;
  long n = i / (p.w * p.h * p.c), group = ci / cg, c = ci % cg;
  gcptr pg = dy + p.dy_offset;
  gcptr pw = weight + p.in_offset;
  WIDE acc = 0;
  for (long o = group * og; o < (group + 1) * og; ++o) {
    for (long a = 0; a < p.kh; ++a) {
      long t = row + p.ph - a * p.dh;
      if (t < 0 || t % p.sh != 0 || t / p.sh >= p.oh) continue;
      for (long b = 0; b < p.kw; ++b) {
        long u = col + p.pw - b * p.dw;
        if (u < 0 || u % p.sw != 0 || u / p.sw >= p.ow) continue;
        acc += (WIDE)LD(pg, ((n * p.o + o) * p.oh + t / p.sh) * p.ow + u / p.sw) *
               (WIDE)LD(pw, ((o * cg + c) * p.kh + a) * p.kw + b);
      }
    }
  }
  ST(dx + p.out_offset, i, (CX)acc);
}

// dweight[o, c, a, b]: over n, oh, ow, dy * x at the tap's position.
__kernel void conv2d_grad_weight(gcptr dy, gcptr x, gptr dweight, conv_grad_t p) {
  long cg = p.c / p.groups, og = p.o / p.groups;
  long i = get_global_id(0);
  if (i >= p.o * cg * p.kh * p.kw) return;
  long b = i % p.kw, a = (i / p.kw) % p.kh, c = (i / (p.kw * p.kh)) % cg;
  long o = i / (p.kw * p.kh * cg), ch = o / og * cg + c;
  gcptr pg = dy + p.dy_offset;
  gcptr px = x + p.in_offset;
  WIDE acc = 0;
  for (long n = 0; n < p.n; ++n) {
    for (long oh = 0; oh < p.oh; ++oh) {
      long h = oh * p.sh - p.ph + a * p.dh;
      if (h < 0 || h >= p.h) continue;
      for (long ow = 0; ow < p.ow; ++ow) {
        long w = ow * p.sw - p.pw + b * p.dw;
        if (w < 0 || w >= p.w) continue;
        acc += (WIDE)LD(pg, ((n * p.o + o) * p.oh + oh) * p.ow + ow) *
               (WIDE)LD(px, ((n * p.c + ch) * p.h + h) * p.w + w);
      }
    }
  }
  ST(dweight + p.out_offset, i, (CX)acc);
}

// ---- scaled_dot_product_attention_grad ---------------------------------------
// Three passes over [batch, Lq, D] q, [batch, Lk, D] k, [batch, Lk, Dv] v and
// [batch, Lq, Dv] dy: per query row its score maximum m, exp-sum l and
// delta = sum_j p_j (dy . v_j) into |stats|; dq per element; dk and dv per
// element (column c < D: dk, else dv). A causal row i sees keys j < visible(i).
typedef struct {
  long batch, lq, lk, d, dv, shift, causal;
  long dy_offset, q_offset, k_offset, v_offset; /* bytes */
} attention_grad_t;

inline long attention_visible(const attention_grad_t* p, long i) {
  return p->causal ? clamp(i + p->shift + 1, 0L, p->lk) : p->lk;
}

inline WIDE attention_score(gcptr pq, gcptr pk, const attention_grad_t* p, long b, long i, long j,
                            WIDE scale) {
  WIDE s = 0;
  for (long t = 0; t < p->d; ++t) {
    s += (WIDE)LD(pq, (b * p->lq + i) * p->d + t) * (WIDE)LD(pk, (b * p->lk + j) * p->d + t);
  }
  return s * scale;
}

inline WIDE attention_dp(gcptr pg, gcptr pv, const attention_grad_t* p, long b, long i, long j) {
  WIDE s = 0;
  for (long t = 0; t < p->dv; ++t) {
    s += (WIDE)LD(pg, (b * p->lq + i) * p->dv + t) * (WIDE)LD(pv, (b * p->lk + j) * p->dv + t);
  }
  return s;
}

__kernel void attention_grad_rows(gcptr dy, gcptr q, gcptr k, gcptr v, gptr stats, ulong so,
                                  attention_grad_t p, real_arg scale_in) {
  long row = get_global_id(0);
  if (row >= p.batch * p.lq) return;
  long b = row / p.lq, i = row % p.lq;
  gcptr pq = q + p.q_offset;
  gcptr pk = k + p.k_offset;
  gcptr pv = v + p.v_offset;
  gcptr pg = dy + p.dy_offset;
  WIDE scale = (WIDE)scale_in;
  long visible = attention_visible(&p, i);
  WIDE m = 0;
  for (long j = 0; j < visible; ++j) {
    WIDE s = attention_score(pq, pk, &p, b, i, j, scale);
    m = (j == 0 || s > m || s != s) && m == m ? s : m;
  }
  WIDE l = 0, weighted = 0;
  for (long j = 0; j < visible; ++j) {
    WIDE e = exp(attention_score(pq, pk, &p, b, i, j, scale) - m);
    l += e;
    weighted += e * attention_dp(pg, pv, &p, b, i, j);
  }
  __global WIDE* st = (__global WIDE*)(stats + so);
  st[3 * row] = m;
  st[3 * row + 1] = l;
  st[3 * row + 2] = visible > 0 ? weighted / l : (WIDE)0;
}

__kernel void attention_grad_q(gcptr dy, gcptr q, gcptr k, gcptr v, gcptr stats, ulong so,
                               gptr dq, ulong dqo, attention_grad_t p, real_arg scale_in) {
  long idx = get_global_id(0);
  if (idx >= p.batch * p.lq * p.d) return;
  long t = idx % p.d, row = idx / p.d;
  long b = row / p.lq, i = row % p.lq;
  gcptr pq = q + p.q_offset;
  gcptr pk = k + p.k_offset;
  gcptr pv = v + p.v_offset;
  gcptr pg = dy + p.dy_offset;
  WIDE scale = (WIDE)scale_in;
  __global const WIDE* st = (__global const WIDE*)(stats + so);
  WIDE m = st[3 * row], l = st[3 * row + 1], delta = st[3 * row + 2];
  long visible = attention_visible(&p, i);
  WIDE acc = 0;
  for (long j = 0; j < visible; ++j) {
    WIDE prob = exp(attention_score(pq, pk, &p, b, i, j, scale) - m) / l;
    WIDE ds = prob * (attention_dp(pg, pv, &p, b, i, j) - delta) * scale;
    acc += ds * (WIDE)LD(pk, (b * p.lk + j) * p.d + t);
  }
  ST(dq + dqo, idx, (CX)acc);
}

__kernel void attention_grad_kv(gcptr dy, gcptr q, gcptr k, gcptr v, gcptr stats, ulong so,
                                gptr dk, ulong dko, gptr dv, ulong dvo, attention_grad_t p,
                                real_arg scale_in) {
  long width = p.d + p.dv;
  long idx = get_global_id(0);
  if (idx >= p.batch * p.lk * width) return;
  long col = idx % width, key = idx / width;
  long b = key / p.lk, j = key % p.lk;
  gcptr pq = q + p.q_offset;
  gcptr pk = k + p.k_offset;
  gcptr pv = v + p.v_offset;
  gcptr pg = dy + p.dy_offset;
  WIDE scale = (WIDE)scale_in;
  __global const WIDE* st = (__global const WIDE*)(stats + so);
  WIDE acc = 0;
  for (long i = 0; i < p.lq; ++i) {
    if (j >= attention_visible(&p, i)) continue;
    long row = b * p.lq + i;
    WIDE prob = exp(attention_score(pq, pk, &p, b, i, j, scale) - st[3 * row]) / st[3 * row + 1];
    if (col < p.d) {
      WIDE ds = prob * (attention_dp(pg, pv, &p, b, i, j) - st[3 * row + 2]) * scale;
      acc += ds * (WIDE)LD(pq, row * p.d + col);
    } else {
      acc += prob * (WIDE)LD(pg, row * p.dv + (col - p.d));
    }
  }
  if (col < p.d) {
    ST(dk + dko, key * p.d + col, (CX)acc);
  } else {
    ST(dv + dvo, key * p.dv + (col - p.d), (CX)acc);
  }
}
