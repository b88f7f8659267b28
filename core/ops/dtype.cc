#include "oar/dtype.hpp"

#include <string>

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

}  // namespace oar
