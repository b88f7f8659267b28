#include "oar/error.hpp"

namespace oar {
namespace {

std::string describe(oar_status_t code, const std::string& message, const std::string& plugin) {
  std::string text = plugin.empty() ? "" : "[" + plugin + "] ";
  return text + status_name(code) + ": " + message;
}

}  // namespace

Error::Error(oar_status_t code, const std::string& message, std::string plugin)
    : std::runtime_error(describe(code, message, plugin)),
      code_(code),
      message_(message),
      plugin_(std::move(plugin)) {}

}  // namespace oar
