// Shared by every OAR OpenCL program (prepended by program.cc): element
// types, their loads and stores, and the geometry structs the host passes.
//
// A program is built for one dtype X, given as -DX=<tag> -DX_<TAG> with tag
// one of f16 bf16 f32 f64 i32 i64 bool i8 u8 i16. For each tag: S_<tag> is the storage
// type, C_<tag> the type arithmetic happens in (f16 and bf16 in float, one
// rounding at the store), U_<tag> the unsigned type integer arithmetic wraps
// in, ld_<tag>(base, i) / st_<tag>(base, i, v) load and store element i of a
// byte address. Tensors arrive as a buffer and a byte offset.
#ifdef OAR_HAS_FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double acc_t; /* wide accumulator of float sums */
#else
typedef float acc_t;
#endif

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

typedef __global uchar* gptr;
typedef __global const uchar* gcptr;

// The stream's index error record (a buffer of 3 longs): the low int of [0] is
// the code of the operator that failed (0 none; the host names the codes in
// stream.cc: 1 index_select, 2 gather, 3 embedding, 4 cross_entropy,
// 5 embedding_grad, 6 cross_entropy_grad, 7 one_hot, 8 scatter, 9 scatter_add),
// [1] the index, [2] its bound. The first work item to fail fills it.
inline void index_error(__global long* error, int op, long index, long bound) {
  if (atomic_cmpxchg((volatile __global int*)error, 0, op) == 0) {
    error[1] = index;
    error[2] = bound;
  }
}

typedef ushort S_f16;
typedef float C_f16;
typedef float U_f16;
inline float ld_f16(gcptr p, long i) { return vload_half(i, (__global const half*)p); }
inline void st_f16(gptr p, long i, float v) { vstore_half_rte(v, i, (__global half*)p); }

typedef ushort S_bf16;
typedef float C_bf16;
typedef float U_bf16;
inline float ld_bf16(gcptr p, long i) {
  return as_float((uint)((__global const ushort*)p)[i] << 16);
}
// Round to nearest even; NaN stays NaN (quieted).
inline void st_bf16(gptr p, long i, float v) {
  uint w = as_uint(v);
  ushort r;
  if ((w & 0x7fffffffu) > 0x7f800000u) {
    r = (ushort)((w >> 16) | 0x40u);
  } else {
    w += 0x7fffu + ((w >> 16) & 1u);
    r = (ushort)(w >> 16);
  }
  ((__global ushort*)p)[i] = r;
}

typedef float S_f32;
typedef float C_f32;
typedef float U_f32;
inline float ld_f32(gcptr p, long i) { return ((__global const float*)p)[i]; }
inline void st_f32(gptr p, long i, float v) { ((__global float*)p)[i] = v; }

#ifdef OAR_HAS_FP64
typedef double S_f64;
typedef double C_f64;
typedef double U_f64;
inline double ld_f64(gcptr p, long i) { return ((__global const double*)p)[i]; }
inline void st_f64(gptr p, long i, double v) { ((__global double*)p)[i] = v; }
#endif

typedef int S_i32;
typedef int C_i32;
typedef uint U_i32;
inline int ld_i32(gcptr p, long i) { return ((__global const int*)p)[i]; }
inline void st_i32(gptr p, long i, int v) { ((__global int*)p)[i] = v; }

typedef long S_i64;
typedef long C_i64;
typedef ulong U_i64;
inline long ld_i64(gcptr p, long i) { return ((__global const long*)p)[i]; }
inline void st_i64(gptr p, long i, long v) { ((__global long*)p)[i] = v; }

// The narrow integers compute in int (exact for every sum, difference and
// product of two of them) and store the low bits: the result wraps.
typedef char S_i8;
typedef int C_i8;
typedef uint U_i8;
inline int ld_i8(gcptr p, long i) { return ((__global const char*)p)[i]; }
inline void st_i8(gptr p, long i, long v) { ((__global uchar*)p)[i] = (uchar)(ulong)v; }

typedef uchar S_u8;
typedef int C_u8;
typedef uint U_u8;
inline int ld_u8(gcptr p, long i) { return ((__global const uchar*)p)[i]; }
inline void st_u8(gptr p, long i, long v) { ((__global uchar*)p)[i] = (uchar)(ulong)v; }

typedef short S_i16;
typedef int C_i16;
typedef uint U_i16;
inline int ld_i16(gcptr p, long i) { return ((__global const short*)p)[i]; }
inline void st_i16(gptr p, long i, long v) { ((__global ushort*)p)[i] = (ushort)(ulong)v; }

typedef uchar S_bool;
typedef int C_bool;
typedef uint U_bool;
inline int ld_bool(gcptr p, long i) { return ((__global const uchar*)p)[i] != 0; }
inline void st_bool(gptr p, long i, int v) { ((__global uchar*)p)[i] = v != 0; }

#if defined(X_F16) || defined(X_BF16) || defined(X_F32) || defined(X_F64)
#define IS_FLOAT 1
#elif defined(X_I32) || defined(X_I64) || defined(X_I8) || defined(X_U8) || defined(X_I16)
#define IS_INT 1
#else
#define IS_BOOL 1
#endif

#ifdef X
#define SX CAT(S_, X)
#define CX CAT(C_, X)
#define UX CAT(U_, X)
#define LD CAT(ld_, X)
#define ST CAT(st_, X)
#endif

// Up to 8 dimensions; strides in elements, offsets in bytes. Tensor 0 is the
// output, 1.. the inputs, each seen through |shape| (the output's shape; a
// broadcast input has stride 0 on a stretched dimension).
#define MAX_DIMS 8
typedef struct {
  long rank;
  long numel;
  long shape[MAX_DIMS];
  long strides[4][MAX_DIMS];
  long offsets[4];
} geo_t;

// Element offsets of linear output index |i| for |count| tensors.
inline void geo_offsets(const geo_t* g, long i, int count, long* out) {
  for (int t = 0; t < count; ++t) out[t] = 0;
  for (int d = (int)g->rank - 1; d >= 0; --d) {
    long extent = g->shape[d];
    long index = i % extent;
    i /= extent;
    for (int t = 0; t < count; ++t) out[t] += index * g->strides[t][d];
  }
}

// Round to odd: the float nearest |v| toward zero, with its last bit set when
// inexact. Rounding that once more to f16 or bf16 (fewer than 22 bits) gives
// the correctly rounded value, which a plain (float) cast would not.
#ifdef OAR_HAS_FP64
inline float odd_from_double(double v) {
  float f = convert_float_rtz(v);
  if ((double)f != v && f == f) f = as_float(as_uint(f) | 1u);
  return f;
}
#endif
inline float odd_from_long(long v) {
  float f = convert_float_rtz(v);
  if (convert_long(f) != v) f = as_float(as_uint(f) | 1u);
  return f;
}

// Float attributes (eps, scale) as kernel arguments: double where the device
// has it, so that f64 kernels see the attribute unrounded.
#ifdef OAR_HAS_FP64
typedef double real_arg;
#else
typedef float real_arg;
#endif
