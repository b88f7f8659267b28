#include "oar/sdk/host_wait.hpp"

#include <cerrno>
#include <cstdlib>

#include "oar/sdk/plugin.hpp"

namespace oar::sdk {
namespace {

constexpr long kDefaultMicroseconds = 100;
constexpr long kMostMicroseconds = 1000000;

}  // namespace

std::chrono::nanoseconds parse_spin_budget(const char* text, std::string* problem) {
  const std::chrono::nanoseconds fallback = std::chrono::microseconds(kDefaultMicroseconds);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  long value = std::strtol(text, &end, 10);
  if (errno != 0 || *end != '\0' || value < 0 || value > kMostMicroseconds) {
    *problem = std::string("OAR_SYNC_SPIN_US=\"") + text +
               "\" is not a whole number of microseconds from 0 to 1000000; polling " +
               std::to_string(kDefaultMicroseconds) +
               " us before blocking (set it to 0 to block at once)";
    return fallback;
  }
  return std::chrono::microseconds(value);
}

std::chrono::nanoseconds spin_budget() {
  static const std::chrono::nanoseconds budget = [] {
    std::string problem;
    std::chrono::nanoseconds parsed =
        parse_spin_budget(secure_getenv("OAR_SYNC_SPIN_US"), &problem);
    if (!problem.empty()) oar::sdk::log(OAR_LOG_LEVEL_WARNING, problem);
    return parsed;
  }();
  return budget;
}

}  // namespace oar::sdk
