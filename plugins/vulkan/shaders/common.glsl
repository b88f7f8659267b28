// What every OAR compute shader shares: the push constants, the parameter
// block, the per-stream error word, dtype storage and conversions.
//
// Dtypes are numbered 1 f16, 2 bf16, 3 f32, 4 i32, 5 i64, 6 bool, 7 i8, 8 u8,
// 9 i16 and passed as -D defines; f16 and bf16 are stored as uint16 and
// computed in f32 with the conversions below (round to nearest even, done by
// hand so that no driver rounding mode or denormal flushing is involved), bool
// is one byte and computed as int 0/1, i8/u8/i16 are computed as int and
// stored as their low bits (wrapping).
#extension GL_EXT_shader_explicit_arithmetic_types : require
#extension GL_EXT_shader_8bit_storage : require
#extension GL_EXT_shader_16bit_storage : require

layout(local_size_x_id = 0) in;

// pbase: where this dispatch's parameters start in the parameter block;
// batch: the stream value of the command buffer, written to the error word
// when an index is out of range, so the host knows which work failed.
layout(push_constant) uniform PushConstants {
  uint pbase;
  uint batch;
}
pc;

layout(std430, set = 0, binding = 8) readonly buffer ParamBlock { int p[]; }
params;
// The error word: first_failed is the lowest failed batch; the first
// invocation to fail also records its operator's code (the host names them in
// stream.cc: 1 index_select, 2 gather, 3 embedding, 4 cross_entropy,
// 5 embedding_grad, 6 cross_entropy_grad, 7 one_hot, 8 scatter, 9 scatter_add),
// the index and its bound.
layout(std430, set = 0, binding = 9) buffer ErrorWord {
  uint first_failed;
  uint op;
  int64_t index;
  int64_t bound;
}
error_word;

int P(int i) { return params.p[pc.pbase + uint(i)]; }
uint PU(int i) { return uint(params.p[pc.pbase + uint(i)]); }
float PF(int i) { return intBitsToFloat(params.p[pc.pbase + uint(i)]); }

void fail_index(uint op, int64_t index, int64_t bound) {
  atomicMin(error_word.first_failed, pc.batch);
  if (atomicCompSwap(error_word.op, 0u, op) == 0u) {
    error_word.index = index;
    error_word.bound = bound;
  }
}

uint thread_count() { return gl_NumWorkGroups.x * gl_WorkGroupSize.x; }

// llvmpipe ends a loop nest silently after 65535 turns of its internal
// counter (LP_MAX_TGSI_LOOP_ITERATIONS; about 21845 iterations of a typical
// body, all loops of the nest together). The host keeps the work of one
// invocation far below that (see kLoopBudget) and splits long reductions.

#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)

#define STORAGE_1 uint16_t
#define STORAGE_2 uint16_t
#define STORAGE_3 float
#define STORAGE_4 int
#define STORAGE_5 int64_t
#define STORAGE_6 uint8_t
#define STORAGE_7 int8_t
#define STORAGE_8 uint8_t
#define STORAGE_9 int16_t
#define COMPUTE_1 float
#define COMPUTE_2 float
#define COMPUTE_3 float
#define COMPUTE_4 int
#define COMPUTE_5 int64_t
#define COMPUTE_6 int
#define COMPUTE_7 int
#define COMPUTE_8 int
#define COMPUTE_9 int

float half_to_float(uint bits) {
  uint sign = (bits & 0x8000u) << 16;
  uint exponent = (bits >> 10) & 0x1fu;
  uint mantissa = bits & 0x3ffu;
  if (exponent == 0x1fu) return uintBitsToFloat(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0u) return uintBitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));
  // Zero or subnormal: exact in f32 as mantissa * 2^-24.
  float magnitude = float(mantissa) * 5.9604644775390625e-8;
  return sign != 0u ? -magnitude : magnitude;
}

uint float_to_half(float value) {
  uint word = floatBitsToUint(value);
  uint sign = (word >> 16) & 0x8000u;
  uint magnitude = word & 0x7fffffffu;
  if (magnitude > 0x7f800000u) return sign | 0x7e00u;
  if (magnitude >= 0x477ff000u) return sign | 0x7c00u;
  if (magnitude < 0x38800000u) {
    if (magnitude < 0x33000000u) return sign;
    uint exponent = magnitude >> 23;
    uint mantissa = (magnitude & 0x7fffffu) | 0x800000u;
    uint shift = 126u - exponent;
    uint half_mantissa = mantissa >> shift;
    uint rest = mantissa & ((1u << shift) - 1u);
    uint halfway = 1u << (shift - 1u);
    if (rest > halfway || (rest == halfway && (half_mantissa & 1u) != 0u)) ++half_mantissa;
    return sign | half_mantissa;
  }
  uint rounded = magnitude + 0xfffu + ((magnitude >> 13) & 1u);
  return sign | ((rounded - 0x38000000u) >> 13);
}

float bf16_to_float(uint bits) { return uintBitsToFloat(bits << 16); }

uint float_to_bf16(float value) {
  uint word = floatBitsToUint(value);
  if ((word & 0x7fffffffu) > 0x7f800000u) return (word >> 16) | 0x40u;
  word += 0x7fffu + ((word >> 16) & 1u);
  return word >> 16;
}

#define FROM_1(x) half_to_float(uint(x))
#define FROM_2(x) bf16_to_float(uint(x))
#define FROM_3(x) (x)
#define FROM_4(x) (x)
#define FROM_5(x) (x)
#define FROM_6(x) (uint(x) != 0u ? 1 : 0)
#define FROM_7(x) int(x)
#define FROM_8(x) int(uint(x))
#define FROM_9(x) int(x)
#define TO_1(x) uint16_t(float_to_half(x))
#define TO_2(x) uint16_t(float_to_bf16(x))
#define TO_3(x) (x)
#define TO_4(x) (x)
#define TO_5(x) (x)
#define TO_6(x) uint8_t((x) != 0 ? 1 : 0)
#define TO_7(x) int8_t(x)
#define TO_8(x) uint8_t(uint(x))
#define TO_9(x) int16_t(x)

// TENSOR(binding, dtype, name) declares buffer |name| with load_name(i) and
// store_name(i, value) in the dtype's compute type; raw access is name.v[i].
#define TENSOR(B, DT, name)                                                           \
  layout(std430, set = 0, binding = B) buffer name##_block { CAT(STORAGE_, DT) v[]; } \
  name;                                                                               \
  CAT(COMPUTE_, DT) load_##name(uint i) { return CAT(FROM_, DT)(name.v[i]); }         \
  void store_##name(uint i, CAT(COMPUTE_, DT) value) { name.v[i] = CAT(TO_, DT)(value); }

// Row-major unravelling of |linear| over |ndim| sizes at params[shape_at],
// dotted with the strides at params[strides_at].
// Strides may be negative (DLPack allows it), so offsets are signed.
int strided_offset(uint linear, int ndim, int shape_at, int strides_at) {
  int offset = 0;
  for (int d = ndim - 1; d >= 0; --d) {
    uint extent = PU(shape_at + d);
    uint index = linear % extent;
    linear /= extent;
    offset += int(index) * P(strides_at + d);
  }
  return offset;
}
