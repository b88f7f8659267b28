#include "core/util/status.h"

namespace oar {

const char* status_name(oar_status_t code) {
  switch (code) {
    case OAR_STATUS_OK:
      return "OK";
    case OAR_STATUS_CANCELLED:
      return "CANCELLED";
    case OAR_STATUS_UNKNOWN:
      return "UNKNOWN";
    case OAR_STATUS_INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case OAR_STATUS_DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case OAR_STATUS_NOT_FOUND:
      return "NOT_FOUND";
    case OAR_STATUS_ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case OAR_STATUS_PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case OAR_STATUS_RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case OAR_STATUS_FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case OAR_STATUS_ABORTED:
      return "ABORTED";
    case OAR_STATUS_OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case OAR_STATUS_UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case OAR_STATUS_INTERNAL:
      return "INTERNAL";
    case OAR_STATUS_UNAVAILABLE:
      return "UNAVAILABLE";
    case OAR_STATUS_DATA_LOSS:
      return "DATA_LOSS";
    default:
      return "UNKNOWN_STATUS_CODE";
  }
}

std::string Status::to_string() const {
  if (ok()) return "OK";
  return status_text(code_) + ": " + message_;
}

std::string status_text(oar_status_t code) {
  std::string name = status_name(code);
  if (name == "UNKNOWN_STATUS_CODE") name += "(" + std::to_string(code) + ")";
  return name;
}

}  // namespace oar
