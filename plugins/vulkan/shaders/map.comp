// Elementwise work over an iteration space of up to 8 dimensions: moves
// (copy, transpose, slice, concat), fill, cast, where, unary and binary
// arithmetic, comparisons. Every operand is (element offset, strides) over the
// space, so broadcasting is a zero stride and a layout operator is a strided
// copy. OP (a specialisation constant) picks the operation; DTA (a), DTB (b
// and c) and DTY (y) are the dtypes.
//
// Parameters: 0 n, 1 ndim, 2..9 shape, then (offset, 8 strides) for a at 10,
// b at 19, c at 28, y at 37; 46 and 47 the op's scalars.
#version 450
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;

TENSOR(0, DTA, a)
TENSOR(1, DTB, b)
TENSOR(2, DTB, c)
TENSOR(3, DTY, y)

const int kCopy = 0, kCast = 1, kFill = 2, kWhere = 3;
const int kNeg = 10, kAbs = 11, kRelu = 12, kExp = 13, kLog = 14, kSqrt = 15, kRsqrt = 16,
          kSin = 17, kCos = 18, kTanh = 19, kSigmoid = 20, kGelu = 21, kGeluTanh = 22, kSilu = 23,
          kErf = 24, kFloor = 25, kCeil = 26, kReciprocal = 27;
const int kAdd = 40, kSub = 41, kMul = 42, kDiv = 43, kMaximum = 44, kMinimum = 45, kPow = 46;
const int kEq = 60, kNe = 61, kLt = 62, kLe = 63, kGt = 64, kGe = 65;

#define IS_FLOAT(DT) (DT <= 3)
#define TY CAT(COMPUTE_, DTY)
#define TA CAT(COMPUTE_, DTA)

float nan_value() { return uintBitsToFloat(0x7fc00000u); }

// tanh from one exponential of a non-positive argument: never inf / inf.
float tanh_f(float x) {
  float t = exp(-2.0 * abs(x));
  float r = (1.0 - t) / (1.0 + t);
  return x < 0.0 ? -r : r;
}

// erf: Taylor series near 0 (relative accuracy where erf is small), else
// 1 - erfc with the Numerical Recipes Chebyshev fit (relative error < 1.2e-7).
float erf_f(float x) {
  float z = abs(x);
  if (z < 0.5) {
    float x2 = x * x;
    float s = 1.0 / 75600.0;
    s = s * (-x2) + 1.0 / 9360.0;
    s = s * (-x2) + 1.0 / 1320.0;
    s = s * (-x2) + 1.0 / 216.0;
    s = s * (-x2) + 1.0 / 42.0;
    s = s * (-x2) + 1.0 / 10.0;
    s = s * (-x2) + 1.0 / 3.0;
    s = s * (-x2) + 1.0;
    return 1.1283791670955126 * x * s;
  }
  float t = 1.0 / (1.0 + 0.5 * z);
  float poly =
      -z * z - 1.26551223 +
      t * (1.00002368 +
           t * (0.37409196 +
                t * (0.09678418 +
                     t * (-0.18628806 +
                          t * (0.27886807 +
                               t * (-1.13520398 +
                                    t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float r = 1.0 - t * exp(poly);
  return x < 0.0 ? -r : r;
}

float pow_f(float base, float e) {
  if (e == 0.0 || base == 1.0) return 1.0;
  if (isnan(base) || isnan(e)) return nan_value();
  if (isinf(e) && abs(base) == 1.0) return 1.0;  // C's pow(-1, +-inf)
  bool integral = floor(e) == e && !isinf(e);
  bool odd = integral && abs(e) < 16777216.0 && (int(abs(e)) & 1) == 1;
  // An infinite exponent counts as an even integer (C99 F.9.4.4).
  if (base < 0.0 && !integral && !isinf(base) && !isinf(e)) return nan_value();
  float magnitude;
  if (base == 0.0) {
    magnitude = e < 0.0 ? uintBitsToFloat(0x7f800000u) : 0.0;
  } else {
    magnitude = exp2(e * log2(abs(base)));
  }
  bool negative = (base < 0.0 || (base == 0.0 && floatBitsToUint(base) != 0u)) && odd;
  return negative ? -magnitude : magnitude;
}

#if IS_FLOAT(DTY)
float unary(float x) {
  switch (OP) {
    case kNeg:
      return -x;
    case kAbs:
      return abs(x);
    case kRelu:
      return x < 0.0 ? 0.0 : x;
    case kExp:
      return exp(x);
    case kLog:
      if (x < 0.0) return nan_value();
      if (x == 0.0) return uintBitsToFloat(0xff800000u);
      if (isinf(x)) return x;
      return log(x);
    case kSqrt:
      if (x < 0.0) return nan_value();
      if (x == 0.0 || isinf(x)) return x;
      return sqrt(x);
    case kRsqrt:
      if (x < 0.0) return nan_value();
      if (x == 0.0) return 1.0 / x;
      if (isinf(x)) return 0.0;
      return 1.0 / sqrt(x);
    case kSin:
      return isinf(x) ? nan_value() : sin(x);
    case kCos:
      return isinf(x) ? nan_value() : cos(x);
    case kTanh:
      return tanh_f(x);
    case kSigmoid:
      return 1.0 / (1.0 + exp(-x));
    case kGelu:
      return 0.5 * x * (1.0 + erf_f(x * 0.70710678118654752));
    case kGeluTanh:
      return 0.5 * x * (1.0 + tanh_f(0.79788456080286536 * (x + 0.044715 * x * x * x)));
    case kSilu:
      return x / (1.0 + exp(-x));
    case kErf:
      return erf_f(x);
    case kFloor:
      return floor(x);
    case kCeil:
      return ceil(x);
    case kReciprocal:
      return 1.0 / x;
  }
  return x;
}

float binary(float l, float r) {
  switch (OP) {
    case kAdd:
      return l + r;
    case kSub:
      return l - r;
    case kMul:
      return l * r;
    case kDiv:
      return l / r;
    case kMaximum:
      return isnan(l) || isnan(r) ? nan_value() : max(l, r);
    case kMinimum:
      return isnan(l) || isnan(r) ? nan_value() : min(l, r);
    case kPow:
      return pow_f(l, r);
  }
  return l;
}
#else
TY unary(TY x) {
  switch (OP) {
    case kNeg:
      return -x;  // wraps: -INT_MIN == INT_MIN
    case kAbs:
      return x < 0 ? -x : x;
    case kRelu:
      return x < 0 ? TY(0) : x;
  }
  return x;
}

TY binary(TY l, TY r) {
  switch (OP) {
    case kAdd:
      return l + r;
    case kSub:
      return l - r;
    case kMul:
      return l * r;
    case kMaximum:
      return max(l, r);
    case kMinimum:
      return min(l, r);
  }
  return l;
}
#endif

// Comparisons are written with ordered == and < so that NaN gives false
// (true for ne) whatever the driver does with unordered comparisons.
bool compare(TA l, TA r) {
  switch (OP) {
    case kEq:
      return l == r;
    case kNe:
      return !(l == r);
    case kLt:
      return l < r;
    case kLe:
      return l <= r;
    case kGt:
      return l > r;
    case kGe:
      return l >= r;
  }
  return false;
}

#if (DTY == 1 || DTY == 2) && (DTA == 4 || DTA == 5)
// An integer to f32 rounded to odd (the last bit set when bits were dropped),
// so that the store's rounding to f16 or bf16 is the one correct rounding of
// the integer, not a second one after float(v) rounded it to nearest.
// i32 stays in 32-bit arithmetic: widened to 64 bits, negative values came
// out wrong on lavapipe.
#if DTA == 4
#define INT_T int
#else
#define INT_T int64_t
#endif
float int_to_float_round_odd(INT_T v) {
  float f = float(v);
  if (abs(f) < 16777216.0) return f;  // below 2^24 every integer is exact
  INT_T half_f = INT_T(f * 0.5);      // f is even here, and f / 2 fits even when f is 2^31 or 2^63
  INT_T rest = (v - half_f) - half_f;  // v - f, exactly
  if (rest == INT_T(0)) return f;
  uint bits = floatBitsToUint(f);
  if ((rest < INT_T(0)) == (v > INT_T(0))) --bits;  // |f| > |v|: rounded away from zero, step back
  return uintBitsToFloat(bits | 1u);
}
#endif

void main() {
  uint n = PU(0);
  int nd = P(1);
  for (uint i = gl_GlobalInvocationID.x; i < n; i += thread_count()) {
    uint yi = uint(P(37) + strided_offset(i, nd, 2, 38));
    if (OP == kFill) {
#if DTY == 5
      y.v[yi] = int64_t(uint64_t(PU(46)) | (uint64_t(PU(47)) << 32));
#elif DTY == 3
      y.v[yi] = intBitsToFloat(P(46));
#else
      y.v[yi] = CAT(STORAGE_, DTY)(P(46));
#endif
      continue;
    }
    uint ai = uint(P(10) + strided_offset(i, nd, 2, 11));
    if (OP == kCopy) {
#if DTA == DTY
      y.v[yi] = a.v[ai];
#endif
    } else if (OP == kCast) {
#if DTY == 6
      store_y(yi, load_a(ai) == TA(0) ? 0 : 1);
#elif (DTY == 1 || DTY == 2) && (DTA == 4 || DTA == 5)
      store_y(yi, int_to_float_round_odd(load_a(ai)));
#else
      store_y(yi, TY(load_a(ai)));
#endif
    } else if (OP == kWhere) {
#if DTB == DTY
      uint bi = uint(P(19) + strided_offset(i, nd, 2, 20));
      uint ci = uint(P(28) + strided_offset(i, nd, 2, 29));
      y.v[yi] = load_a(ai) != 0 ? b.v[bi] : c.v[ci];
#endif
    } else if (OP < 40) {
#if DTA == DTY
      store_y(yi, unary(load_a(ai)));
#endif
    } else {
      uint bi = uint(P(19) + strided_offset(i, nd, 2, 20));
      if (OP < 60) {
#if DTA == DTY && DTB == DTY
        store_y(yi, binary(load_a(ai), load_b(bi)));
#endif
      } else {
#if DTY == 6 && DTA == DTB
        store_y(yi, compare(load_a(ai), load_b(bi)) ? 1 : 0);
#endif
      }
    }
  }
}
