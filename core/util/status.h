// Status and Result<T>: how the core passes errors internally. The C++ API
// turns a failed Status into oar::Error at the framework boundary only.
#pragma once

#include <string>
#include <utility>
#include <variant>

#include "oar/error.hpp"
#include "oar/status.h"

namespace oar {

// The name of |code|: "NOT_FOUND"; a code outside the ABI (a newer ABI, a
// broken plugin) keeps its number: "UNKNOWN_STATUS_CODE(1234)".
std::string status_text(oar_status_t code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(oar_status_t code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status ok_status() { return Status(); }

  bool ok() const { return code_ == OAR_STATUS_OK; }
  oar_status_t code() const { return code_; }
  const std::string& message() const { return message_; }

  // "RESOURCE_EXHAUSTED: <message>"; an unknown code keeps its number.
  std::string to_string() const;

 private:
  oar_status_t code_ = OAR_STATUS_OK;
  std::string message_;
};

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : state_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : state_(std::move(status)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(state_);
  }
  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace oar

#define OAR_RETURN_IF_ERROR(expr)              \
  do {                                         \
    ::oar::Status oar_status_ = (expr);        \
    if (!oar_status_.ok()) return oar_status_; \
  } while (false)

#define OAR_ASSIGN_OR_RETURN(lhs, expr)                 \
  auto OAR_CONCAT_(oar_result_, __LINE__) = (expr);     \
  if (!OAR_CONCAT_(oar_result_, __LINE__).ok())         \
    return OAR_CONCAT_(oar_result_, __LINE__).status(); \
  lhs = std::move(OAR_CONCAT_(oar_result_, __LINE__)).value()
