// OpenCL C kernels of the pointwise, row and index gradients for one dtype (see common.cl).
// Built for the float dtypes only. Tensors are contiguous (the core stages
// strided inputs); row sums run in acc_t (double where the device has it)
// and each result is rounded once at the store.
#ifdef IS_FLOAT

#ifdef X_F64
typedef double WIDE;
#define K(v) v
#else
typedef acc_t WIDE;
#define K(v) v##f
#endif

inline CX sigmoid_of(CX x) { return K(1.0) / (K(1.0) + exp(-x)); }

// ---- pointwise gradients: dx = dy * f'(b), b the second input (x or y) ------
// op: 0 relu, 1 sigmoid (b = y), 2 tanh (b = y), 3 silu, 4 gelu erf form,
// 5 gelu tanh form.
__kernel void pointwise_grad(gcptr dy, ulong dyo, gcptr b, ulong bo, gptr dx, ulong dxo, long n,
                             int op) {
  long i = get_global_id(0);
  if (i >= n) return;
  CX g = LD(dy + dyo, i);
  CX v = LD(b + bo, i);
  CX r;
  if (op == 0) {
    r = isnan(v) ? v : (v > K(0.0) ? g : K(0.0));
  } else if (op == 1) {
    r = g * v * (K(1.0) - v);
  } else if (op == 2) {
    // (1 - y)(1 + y), not 1 - y^2: no cancellation near |y| = 1.
    r = g * ((K(1.0) - v) * (K(1.0) + v));
  } else if (op == 3) {
    r = g * (sigmoid_of(v) * (K(1.0) + v * sigmoid_of(-v)));
  } else if (op == 4) {
    CX cdf = K(0.5) * erfc(-v * K(0.70710678118654752440));
    CX pdf = exp(K(-0.5) * v * v) * K(0.39894228040143267794);
    r = g * (cdf + v * pdf);
  } else {
    CX k = K(0.79788456080286535588), c = K(0.044715);
    CX u = k * (v + c * v * v * v);
    CX s = sigmoid_of(K(2.0) * u), t = sigmoid_of(K(-2.0) * u);
    r = g * (s + K(2.0) * v * s * t * k * (K(1.0) + K(3.0) * c * v * v));
  }
  ST(dx + dxo, i, r);
}

// ---- softmax_grad / log_softmax_grad along an axis: [outer, extent, inner] ---
// take_log 0: dx = y (dy - sum(dy y)); 1: dx = dy - exp(y) sum(dy).
__kernel void softmax_grad(gcptr dy, ulong dyo, gcptr y, ulong yo, gptr dx, ulong dxo, long outer,
                           long extent, long inner, int take_log) {
  long i = get_global_id(0);
  if (i >= outer * inner) return;
  long base = (i / inner) * extent * inner + i % inner;
  gcptr g = dy + dyo;
  gcptr v = y + yo;
  WIDE s = 0;
  for (long j = 0; j < extent; ++j) {
    long at = base + j * inner;
    s += take_log ? (WIDE)LD(g, at) : (WIDE)LD(g, at) * (WIDE)LD(v, at);
  }
  for (long j = 0; j < extent; ++j) {
    long at = base + j * inner;
    WIDE gj = (WIDE)LD(g, at), vj = (WIDE)LD(v, at);
    ST(dx + dxo, at, (CX)(take_log ? gj - exp(vj) * s : vj * (gj - s)));
  }
}

// ---- embedding_grad: one work-item per element (v, d) of dweight [V, D] -----
// Sums dy[p, d] over the positions p whose index is v (in index order); an
// index outside [0, V) raises the stream's error flag.
#define EMBEDDING_GRAD(I)                                                                         \
  __kernel void embedding_grad_##I(gcptr dy, ulong dyo, gcptr index, ulong io, gptr dw, ulong dwo, \
                                   long rows, long width, long count, __global long* error) {       \
    long i = get_global_id(0);                                                                    \
    if (i >= rows * width) return;                                                                \
    long v = i / width, d = i % width;                                                            \
    WIDE s = 0;                                                                                   \
    for (long p = 0; p < count; ++p) {                                                            \
      long t = (long)ld_##I(index + io, p);                                                       \
      if (t < 0 || t >= rows) index_error(error, 5, t, rows);                                     \
      if (t == v) s += (WIDE)LD(dy + dyo, p * width + d);                                         \
    }                                                                                             \
    ST(dw + dwo, i, (CX)s);                                                                       \
  }
EMBEDDING_GRAD(i32)
EMBEDDING_GRAD(i64)

// ---- cross_entropy_grad: one work-item per row; mode 0 none, 1 sum, 2 mean ---
#define CROSS_ENTROPY_GRAD(I)                                                                  \
  __kernel void cross_entropy_grad_##I(gcptr dloss, ulong dlo, gcptr logits, ulong lo,         \
                                       gcptr target, ulong to, gptr dx, ulong dxo, long rows,  \
                                       long classes, int mode, __global long* error) {          \
    long r = get_global_id(0);                                                                 \
    if (r >= rows) return;                                                                     \
    long t = (long)ld_##I(target + to, r);                                                     \
    if (t < 0 || t >= classes) {                                                               \
      index_error(error, 6, t, classes);                                                       \
      return;                                                                                  \
    }                                                                                          \
    WIDE g = mode == 0 ? (WIDE)LD(dloss + dlo, r) : (WIDE)LD(dloss + dlo, 0);                  \
    if (mode == 2) g /= (WIDE)rows;                                                            \
    gcptr in = logits + lo;                                                                    \
    long base = r * classes;                                                                   \
    WIDE m = (WIDE)LD(in, base);                                                               \
    for (long j = 1; j < classes; ++j) {                                                       \
      WIDE v = (WIDE)LD(in, base + j);                                                         \
      m = (v > m || v != v) && m == m ? v : m;                                                 \
    }                                                                                          \
    WIDE s = 0;                                                                                \
    for (long j = 0; j < classes; ++j) s += exp((WIDE)LD(in, base + j) - m);                   \
    for (long j = 0; j < classes; ++j) {                                                       \
      WIDE p = exp((WIDE)LD(in, base + j) - m) / s;                                            \
      ST(dx + dxo, base + j, (CX)(g * (p - (j == t ? (WIDE)1 : (WIDE)0))));                    \
    }                                                                                          \
  }
CROSS_ENTROPY_GRAD(i32)
CROSS_ENTROPY_GRAD(i64)

#endif
