#include "oar/dtype.hpp"

#include <charconv>
#include <string>
#include <string_view>

namespace oar {

std::string dtype_name(DLDataType t) {
  std::string lanes = t.lanes == 1 ? "" : "x" + std::to_string(t.lanes);
  switch (t.code) {
    case kDLFloat:
      return "f" + std::to_string(t.bits) + lanes;
    case kDLBfloat:
      return "bf" + std::to_string(t.bits) + lanes;
    case kDLInt:
      return "i" + std::to_string(t.bits) + lanes;
    case kDLUInt:
      return "u" + std::to_string(t.bits) + lanes;
    case dtype::kDLBoolCode:
      return "bool" + lanes;
    default:
      return "code" + std::to_string(t.code) + ":" + std::to_string(t.bits) + lanes;
  }
}

namespace {

// A decimal number in [1, max] that is all of |text|.
bool parse_count(std::string_view text, unsigned max, unsigned* out) {
  if (text.empty() || text[0] == '0') return false;
  unsigned value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value > max) return false;
  *out = value;
  return true;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool parse_dtype(std::string_view name, DLDataType* out) {
  if (out == nullptr) return false;
  unsigned lanes = 1;
  size_t x = name.rfind('x');
  if (x != std::string_view::npos) {
    if (!parse_count(name.substr(x + 1), 0xffff, &lanes)) return false;
    name = name.substr(0, x);
  }
  unsigned code = 0, bits = 0;
  std::string_view digits;
  if (name == "bool") {
    code = dtype::kDLBoolCode;
    bits = 8;
  } else if (starts_with(name, "code")) {
    size_t colon = name.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view c = name.substr(4, colon - 4);
    if (c == "0") {
      code = 0;
    } else if (!parse_count(c, 255, &code)) {
      return false;
    }
    digits = name.substr(colon + 1);
  } else if (starts_with(name, "bf")) {
    code = kDLBfloat;
    digits = name.substr(2);
  } else if (starts_with(name, "f")) {
    code = kDLFloat;
    digits = name.substr(1);
  } else if (starts_with(name, "i")) {
    code = kDLInt;
    digits = name.substr(1);
  } else if (starts_with(name, "u")) {
    code = kDLUInt;
    digits = name.substr(1);
  } else {
    return false;
  }
  if (bits == 0 && !parse_count(digits, 255, &bits)) return false;
  *out = DLDataType{uint8_t(code), uint8_t(bits), uint16_t(lanes)};
  return true;
}

}  // namespace oar
