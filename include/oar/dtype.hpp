// Element types as DLPack describes them, with OAR's short names.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "dlpack/dlpack.h"

namespace oar {

namespace dtype {
// DLPack 0.8 added kDLBool = 6; Debian 12 ships dlpack 0.6, so OAR names it.
inline constexpr uint8_t kDLBoolCode = 6;

inline constexpr DLDataType f16{kDLFloat, 16, 1};
inline constexpr DLDataType bf16{kDLBfloat, 16, 1};
inline constexpr DLDataType f32{kDLFloat, 32, 1};
inline constexpr DLDataType f64{kDLFloat, 64, 1};
inline constexpr DLDataType i8{kDLInt, 8, 1};
inline constexpr DLDataType i16{kDLInt, 16, 1};
inline constexpr DLDataType i32{kDLInt, 32, 1};
inline constexpr DLDataType i64{kDLInt, 64, 1};
inline constexpr DLDataType u8{kDLUInt, 8, 1};
inline constexpr DLDataType boolean{kDLBoolCode, 8, 1};
}  // namespace dtype

inline bool operator==(DLDataType a, DLDataType b) {
  return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
}
inline bool operator!=(DLDataType a, DLDataType b) { return !(a == b); }

// Bytes per element (lanes included); 0 for sub-byte types.
inline uint64_t dtype_size(DLDataType t) { return uint64_t(t.bits) * t.lanes / 8; }

// "f32", "bf16", "i64", "u8", "bool"; unusual types as "code<c>:<bits>".
std::string dtype_name(DLDataType dtype);

// The dtype dtype_name() names: "f16", "bf16", "f32", "i8", "u8", "bool",
// "i32x4" (lanes), "code<c>:<bits>"; false (|out| untouched) for anything
// else, including bit widths of 0 or above 255 and lanes of 0.
bool parse_dtype(std::string_view name, DLDataType* out);

}  // namespace oar
