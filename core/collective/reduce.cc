// Host reductions for the transports: the element types MPI lacks (f16,
// bf16) and AVG, which MPI does not have.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/collective/engine.h"
#include "oar/collective.h"
#include "oar/dtype.hpp"

namespace oar::detail {
namespace {

float bits_to_float(uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

uint32_t float_to_bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  return bits;
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  if (exponent == 0x1f) return bits_to_float(sign | 0x7f800000 | (mantissa << 13));
  if (exponent == 0) {
    float value = std::ldexp(float(mantissa), -24);  // subnormal or zero
    return sign ? -value : value;
  }
  return bits_to_float(sign | ((exponent + 112) << 23) | (mantissa << 13));
}

uint16_t float_to_half(float value) {
  uint32_t bits = float_to_bits(value);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  if (std::isnan(value)) return uint16_t(sign | 0x7e00);
  float magnitude = std::fabs(value);
  if (magnitude >= 65520.0f) return uint16_t(sign | 0x7c00);  // rounds to infinity
  if (magnitude < std::ldexp(1.0f, -14)) {
    // Subnormal: a multiple of 2^-24, rounded to nearest even by rint.
    return uint16_t(sign | uint16_t(std::nearbyint(std::ldexp(magnitude, 24))));
  }
  uint32_t m = float_to_bits(magnitude);
  uint32_t rounded = m + 0xfff + ((m >> 13) & 1);  // round to nearest even at bit 13
  return uint16_t(sign | (((rounded >> 13) - (112 << 10)) & 0x7fff));
}

float bf16_to_float(uint16_t b) { return bits_to_float(uint32_t(b) << 16); }

uint16_t float_to_bf16(float value) {
  uint32_t bits = float_to_bits(value);
  if (std::isnan(value)) return uint16_t((bits >> 16) | 0x40);
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

template <typename T>
T apply(int32_t op, T a, T b) {
  switch (op) {
    case OAR_REDUCE_OP_PROD:
      return T(a * b);
    case OAR_REDUCE_OP_MAX:
      return std::max(a, b);
    case OAR_REDUCE_OP_MIN:
      return std::min(a, b);
    default:
      return T(a + b);
  }
}

template <typename T>
void reduce_typed(int32_t op, const void* in, void* inout, uint64_t count) {
  const T* a = static_cast<const T*>(in);
  T* b = static_cast<T*>(inout);
  for (uint64_t i = 0; i < count; ++i) b[i] = apply<T>(op, b[i], a[i]);
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void reduce_16(int32_t op, const void* in, void* inout, uint64_t count) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (uint64_t i = 0; i < count; ++i) b[i] = Store(apply<float>(op, Load(b[i]), Load(a[i])));
}

template <typename T>
void divide_typed(void* data, uint64_t count, int32_t divisor) {
  T* p = static_cast<T*>(data);
  for (uint64_t i = 0; i < count; ++i) p[i] = T(p[i] / T(divisor));
}

template <float (*Load)(uint16_t), uint16_t (*Store)(float)>
void divide_16(void* data, uint64_t count, int32_t divisor) {
  uint16_t* p = static_cast<uint16_t*>(data);
  for (uint64_t i = 0; i < count; ++i) p[i] = Store(Load(p[i]) / float(divisor));
}

}  // namespace

bool reducible(DLDataType t) {
  return t == dtype::f16 || t == dtype::bf16 || t == dtype::f32 || t == dtype::f64 ||
         t == dtype::i8 || t == dtype::u8 || t == dtype::i32 || t == dtype::i64;
}

void reduce_host(DLDataType t, int32_t op, const void* in, void* inout, uint64_t count) {
  if (t == dtype::f32) return reduce_typed<float>(op, in, inout, count);
  if (t == dtype::f64) return reduce_typed<double>(op, in, inout, count);
  if (t == dtype::i32) return reduce_typed<int32_t>(op, in, inout, count);
  if (t == dtype::i64) return reduce_typed<int64_t>(op, in, inout, count);
  if (t == dtype::i8) return reduce_typed<int8_t>(op, in, inout, count);
  if (t == dtype::u8) return reduce_typed<uint8_t>(op, in, inout, count);
  if (t == dtype::f16) return reduce_16<half_to_float, float_to_half>(op, in, inout, count);
  if (t == dtype::bf16) return reduce_16<bf16_to_float, float_to_bf16>(op, in, inout, count);
}

void divide_host(DLDataType t, void* data, uint64_t count, int32_t divisor) {
  if (t == dtype::f32) return divide_typed<float>(data, count, divisor);
  if (t == dtype::f64) return divide_typed<double>(data, count, divisor);
  if (t == dtype::i32) return divide_typed<int32_t>(data, count, divisor);
  if (t == dtype::i64) return divide_typed<int64_t>(data, count, divisor);
  if (t == dtype::i8) return divide_typed<int8_t>(data, count, divisor);
  if (t == dtype::u8) return divide_typed<uint8_t>(data, count, divisor);
  if (t == dtype::f16) return divide_16<half_to_float, float_to_half>(data, count, divisor);
  if (t == dtype::bf16) return divide_16<bf16_to_float, float_to_bf16>(data, count, divisor);
}

const char* coll_name(CollKind kind) {
  switch (kind) {
    case CollKind::kAllReduce:
      return "all_reduce";
    case CollKind::kBroadcast:
      return "broadcast";
    case CollKind::kReduce:
      return "reduce";
    case CollKind::kAllGather:
      return "all_gather";
    case CollKind::kReduceScatter:
      return "reduce_scatter";
    case CollKind::kAllToAll:
      return "all_to_all";
    case CollKind::kSend:
      return "send";
    case CollKind::kRecv:
      return "recv";
  }
  return "?";
}

}  // namespace oar::detail
