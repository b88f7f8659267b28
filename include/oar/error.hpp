// oar::Error: how the C++ API reports failures to a framework. It carries the
// canonical status code, a message that names the cause and the fix, and the
// plugin involved (empty when the core itself refused).
#pragma once

#include <stdexcept>
#include <string>

#include "oar/status.h"

namespace oar {

class Error : public std::runtime_error {
 public:
  Error(oar_status_t code, const std::string& message, std::string plugin = {});

  oar_status_t code() const { return code_; }
  const std::string& plugin() const { return plugin_; }
  // The message without the "[plugin] CODE: " prefix that what() carries.
  const std::string& message() const { return message_; }

 private:
  oar_status_t code_;
  std::string message_;
  std::string plugin_;
};

// The canonical name of a status code, e.g. "RESOURCE_EXHAUSTED".
const char* status_name(oar_status_t code);

}  // namespace oar
