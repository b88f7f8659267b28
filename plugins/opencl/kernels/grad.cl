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

#endif
