// The operator set v2 math operators that are elementwise: clip, fmod,
// remainder, logical and bitwise operators, over an iteration space of up to
// 8 dimensions. Every operand is (element offset, strides) over the space, so
// broadcasting is a zero stride. OP (a specialisation constant) picks the
// operation; DT (1 f16, 2 bf16, 3 f32, 4 i32, 5 i64, 6 bool) is every
// operand's dtype.
//
// Parameters (as map.comp's): 0 n, 1 ndim, 2..9 shape, then (offset, 8
// strides) for a at 10, b at 19, c at 28, y at 37.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DT, a)
TENSOR(1, DT, b)
TENSOR(2, DT, c)
TENSOR(3, DT, y)

const int kClip = 1, kFmod = 2, kRemainder = 3, kAnd = 4, kOr = 5, kXor = 6, kNot = 7;

#define T CAT(COMPUTE_, DT)

#if DT <= 3
float nan_value() { return uintBitsToFloat(0x7fc00000u); }

// C's fmod, exactly: |a| = ma * 2^ea, |b| = mb * 2^eb with integer
// mantissas, and ma * 2^(ea - eb) mod mb by long division in 64-bit integers
// (GLSL's mod and SPIR-V's FRem are x - y * floor(x / y), which loses
// everything once the quotient passes 2^24). The result is representable.
float fmod_f(float x, float d) {
  if (isnan(x) || isnan(d) || isinf(x) || d == 0.0) return nan_value();
  if (isinf(d)) return x;
  uint ux = floatBitsToUint(x) & 0x7fffffffu;
  uint ud = floatBitsToUint(d) & 0x7fffffffu;
  if (ux < ud) return x;
  int ex = int(ux >> 23), ed = int(ud >> 23);
  uint64_t mx = uint64_t(ux & 0x7fffffu), md = uint64_t(ud & 0x7fffffu);
  if (ex == 0) ex = 1; else mx |= uint64_t(0x800000u);  // subnormals have no implicit bit
  if (ed == 0) ed = 1; else md |= uint64_t(0x800000u);
  uint64_t r = mx % md;
  for (int left = ex - ed; left > 0; left -= 32) {
    int k = min(left, 32);
    r = (r << uint(k)) % md;
  }
  // r * 2^(ed - 150), with every factor a normal power of two.
  float m = float(uint(r));
  int e = ed - 150;
  if (e < -126) {
    m *= 5.9604644775390625e-8;  // 2^-24, exact: m is an integer below 2^24
    e += 24;
  }
  m *= uintBitsToFloat(uint(e + 127) << 23);
  return (floatBitsToUint(x) & 0x80000000u) != 0u ? -m : m;
}

float remainder_f(float x, float d) {
  float r = fmod_f(x, d);
  if (r == 0.0) return d < 0.0 ? uintBitsToFloat(0x80000000u) : 0.0;
  if ((r < 0.0) != (d < 0.0)) r += d;
  return r;
}

float clip_f(float x, float lo, float hi) {
  if (isnan(x) || isnan(lo) || isnan(hi)) return nan_value();
  float low = x < lo ? lo : x;
  return low > hi ? hi : low;
}
#elif DT == 4 || DT == 5
#if DT == 4
#define UT uint
#else
#define UT uint64_t
#endif
// |x| mod |d| in the unsigned type (GLSL leaves % of negative operands
// undefined): d = 0 gives 0, and INT_MIN % -1 is 0.
T fmod_i(T x, T d) {
  if (d == T(0)) return T(0);
  UT ux = x < T(0) ? UT(0) - UT(x) : UT(x);
  UT ud = d < T(0) ? UT(0) - UT(d) : UT(d);
  UT r = ux % ud;
  return x < T(0) ? T(UT(0) - r) : T(r);
}

T remainder_i(T x, T d) {
  T r = fmod_i(x, d);
  if (r != T(0) && (r < T(0)) != (d < T(0))) r += d;
  return r;
}
#endif

void main() {
  uint n = PU(0);
  int nd = P(1);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    uint yi = uint(P(37) + strided_offset(i, nd, 2, 38));
    uint ai = uint(P(10) + strided_offset(i, nd, 2, 11));
    T p = load_a(ai);
    if (OP == kNot) {
#if DT == 6
      store_y(yi, p == 0 ? 1 : 0);
#elif DT == 4 || DT == 5
      store_y(yi, ~p);
#endif
      continue;
    }
    uint bi = uint(P(19) + strided_offset(i, nd, 2, 20));
    T q = load_b(bi);
#if DT <= 3
    if (OP == kClip) {
      uint ci = uint(P(28) + strided_offset(i, nd, 2, 29));
      store_y(yi, clip_f(p, q, load_c(ci)));
    } else if (OP == kFmod) {
      store_y(yi, fmod_f(p, q));
    } else if (OP == kRemainder) {
      store_y(yi, remainder_f(p, q));
    }
#else
#if DT != 6
    if (OP == kClip) {
      uint ci = uint(P(28) + strided_offset(i, nd, 2, 29));
      T hi = load_c(ci);
      T low = p < q ? q : p;
      store_y(yi, low > hi ? hi : low);
    } else if (OP == kFmod) {
      store_y(yi, fmod_i(p, q));
    } else if (OP == kRemainder) {
      store_y(yi, remainder_i(p, q));
    }
#endif
    // bool loads as 0/1 whatever the stored byte: & | ^ are the truth tables.
    if (OP == kAnd) {
      store_y(yi, p & q);
    } else if (OP == kOr) {
      store_y(yi, p | q);
    } else if (OP == kXor) {
      store_y(yi, p ^ q);
    }
#endif
  }
}
