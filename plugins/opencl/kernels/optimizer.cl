// OpenCL C kernels of the fused optimizer steps for one float dtype X (see
// common.cl). The state of f16 and bf16 parameters is f32; f64 parameters
// have f64 state. One work-item per element reads every input element before
// it writes an output element, so the outputs may be the inputs' own memory
// (the in-place update) or separate buffers; nothing here is declared
// restrict.
#ifdef X_F64
typedef double CS; /* compute and state type */
#define LDS ld_f64
#define STS st_f64
#else
typedef float CS;
#define LDS ld_f32
#define STS st_f32
#endif

// flags: 1 the first step, 2 nesterov, 4 momentum != 0, 8 weight_decay != 0.
__kernel void sgd(gcptr p, ulong po, gcptr g, ulong go, gcptr b, ulong bo, gptr p_out, ulong p_outo,
                  gptr b_out, ulong b_outo, long n, real_arg lr_in, real_arg momentum_in,
                  real_arg keep_in, real_arg decay_in, int flags) {
  long i = get_global_id(0);
  if (i >= n) return;
  CS lr = (CS)lr_in, momentum = (CS)momentum_in, keep = (CS)keep_in, decay = (CS)decay_in;
  CS param = (CS)LD(p + po, i);
  CS grad = (CS)LD(g + go, i);
  CS buf_in = LDS(b + bo, i);
  CS d = (flags & 8) ? grad + decay * param : grad;
  CS buf = buf_in;
  CS direction = d;
  if (flags & 4) {
    buf = (flags & 1) ? d : momentum * buf_in + keep * d;
    direction = (flags & 2) ? d + momentum * buf : buf;
  }
  ST(p_out + p_outo, i, (CX)(param - lr * direction));
  STS(b_out + b_outo, i, buf);
}

// flags: 1 decoupled weight decay (adamw), 2 weight_decay != 0.
__kernel void adam(gcptr p, ulong po, gcptr g, ulong go, gcptr m, ulong mo, gcptr v, ulong vo,
                   gptr p_out, ulong p_outo, gptr m_out, ulong m_outo, gptr v_out, ulong v_outo,
                   long n, real_arg step_size_in, real_arg sqrt_c2_in, real_arg shrink_in,
                   real_arg b1_in, real_arg b2_in, real_arg eps_in, real_arg decay_in, int flags) {
  long i = get_global_id(0);
  if (i >= n) return;
  CS b1 = (CS)b1_in, b2 = (CS)b2_in;
  CS param = (CS)LD(p + po, i);
  CS d = (CS)LD(g + go, i);
  CS m_in = LDS(m + mo, i);
  CS v_in = LDS(v + vo, i);
  if (flags & 1) {
    param *= (CS)shrink_in;
  } else if (flags & 2) {
    d += (CS)decay_in * param;
  }
  CS m1 = b1 * m_in + ((CS)1 - b1) * d;
  CS v1 = b2 * v_in + ((CS)1 - b2) * d * d;
  CS denominator = sqrt(v1) / (CS)sqrt_c2_in + (CS)eps_in;
  ST(p_out + p_outo, i, (CX)(param - (CS)step_size_in * (m1 / denominator)));
  STS(m_out + m_outo, i, m1);
  STS(v_out + v_outo, i, v1);
}

// ---- grad_norm: per-chunk partials, combined in passes, then the norm -----
// kind: 0 the sum of |x| (norm_type 1), 1 the sum of x^2 (2), 2 the largest
// |x| (inf), a NaN winning. Partials are acc_t (double where the device has
// fp64) in scratch memory.
inline acc_t norm_term(acc_t a, int kind) { return kind == 1 ? a * a : a; }
inline acc_t norm_merge(acc_t s, acc_t t, int kind) {
  if (kind != 2) return s + t;
  return (isnan(s) || isnan(t)) ? (acc_t)NAN : fmax(s, t);
}

__kernel void norm_partials(gcptr x, ulong xo, long n, long chunk, gptr partials, ulong po,
                            int kind) {
  long i = get_global_id(0);
  long begin = i * chunk;
  if (begin >= n) return;
  long end = min(n, begin + chunk);
  acc_t s = 0;
  for (long j = begin; j < end; ++j) s = norm_merge(s, norm_term(fabs((acc_t)LD(x + xo, j)), kind), kind);
  ((__global acc_t*)(partials + po))[i] = s;
}

__kernel void norm_combine(gcptr in, ulong io, long count, long chunk, gptr out, ulong oo,
                           int kind) {
  long i = get_global_id(0);
  long begin = i * chunk;
  if (begin >= count) return;
  long end = min(count, begin + chunk);
  __global const acc_t* p = (__global const acc_t*)(in + io);
  acc_t s = 0;
  for (long j = begin; j < end; ++j) s = norm_merge(s, p[j], kind);
  ((__global acc_t*)(out + oo))[i] = s;
}

__kernel void norm_final(gcptr in, ulong io, long count, gptr y, ulong yo, int kind) {
  if (get_global_id(0) != 0) return;
  __global const acc_t* p = (__global const acc_t*)(in + io);
  acc_t s = 0;
  for (long j = 0; j < count; ++j) s = norm_merge(s, p[j], kind);
  STS(y + yo, 0, (CS)(kind == 1 ? sqrt(s) : s));
}

// ---- clip_grad_norm: grad * min(1, max_norm / (total_norm + eps)) ----------
__kernel void clip_grad_norm(gcptr g, ulong go, gcptr total, ulong to, gptr y, ulong yo, long n,
                             real_arg max_norm_in, real_arg eps_in) {
  long i = get_global_id(0);
  if (i >= n) return;
  CS coefficient = (CS)max_norm_in / (LDS(total + to, 0) + (CS)eps_in);
  CS scale = isnan(coefficient) ? coefficient : fmin((CS)1, coefficient);
  ST(y + yo, i, (CX)((CS)LD(g + go, i) * scale));
}
