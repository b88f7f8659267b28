// Every parser of an environment variable against any text. The first byte
// picks the variable; the rest is its value. Each parser must accept the
// value or say why in a printable message, and never throw anything but its
// documented error, abort, hang or read out of bounds.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/alloc/caching_allocator.h"
#include "core/loader/environment.h"
#include "core/loader/probe.h"
#include "core/loader/text.h"
#include "faults.h"
#include "oar/sdk/host_wait.hpp"
#include "oar/sdk/plugin.hpp"
#include "profile.h"
#include "settings.h"

namespace {

void require(bool fact) {
  if (!fact) __builtin_trap();
}

bool printable(const std::string& text) { return oar::loader::printable(text) == text; }

// OAR_DEVICES: problems are printable and name the variable; what an entry
// admits agrees with its text.
void devices(const std::string& text) {
  std::vector<std::string> problems;
  oar::loader::DeviceFilter filter(text, "OAR_DEVICES", &problems);
  for (const std::string& problem : problems) {
    require(printable(problem) && problem.rfind("OAR_DEVICES entry '", 0) == 0);
  }
  bool cpu0 = filter.admits("cpu", 0);
  bool sim1 = filter.admits("sim", 1);
  if (text.empty()) require(cpu0 && sim1);
  if (cpu0 && !text.empty() && text.find_first_not_of(',') != std::string::npos) {
    require(text.find("cpu") != std::string::npos);
  }
  for (const std::string& warning : filter.unmatched({"cpu:0", "sim:0", "sim:1"})) {
    require(printable(warning));
  }
}

// OAR_VALIDATE, OAR_PLUGIN_PROBE: a flag, or nothing and a printable reason.
void flag(const std::string& text) {
  std::string problem;
  auto value = oar::loader::parse_flag("OAR_VALIDATE", text, &problem);
  if (!value) require(!problem.empty() && printable(problem));
}

// OAR_PLUGINS, OAR_PLUGIN_PATH: no empty part, no colon in a part.
void path_list(const std::string& text) {
  size_t total = 0;
  for (const std::string& part : oar::loader::split_path_list(text)) {
    require(!part.empty() && part.find(':') == std::string::npos);
    total += part.size();
  }
  require(total <= text.size());
}

// OAR_PLUGIN_PROBE_TIMEOUT: within (0, 1 h] when accepted.
void probe_timeout(const std::string& text) {
  auto timeout = oar::loader::parse_probe_timeout(text);
  if (timeout) require(timeout->count() >= 1 && timeout->count() <= 3600 * 1000);
}

// OAR_ALLOC_CONF.
void alloc_conf(const std::string& text) {
  auto config = oar::alloc::AllocatorConfig::parse(text);
  if (!config.ok()) require(!config.status().message().empty());
}

// OAR_SIM_FAULTS: a config whose numbers are in range, or the documented error.
void sim_faults(const std::string& text) {
  try {
    oar::sim::FaultConfig config = oar::sim::parse_faults(text);
    require(config.alloc >= 0 && config.alloc <= 1);
    require(config.kernel >= 0 && config.kernel <= 1);
    require(config.copy >= 0 && config.copy <= 1);
    require(config.device >= -1 && config.device <= INT32_MAX);
  } catch (const oar::sdk::Error& error) {
    require(error.code() == OAR_STATUS_INVALID_ARGUMENT);
  }
}

// OAR_SIM_PROFILE.
void sim_profile(const std::string& text) {
  try {
    oar::sim::Profile profile = oar::sim::make_profile(text);
    require(profile.devices >= 1 && profile.properties.total_memory > 0);
  } catch (const oar::sdk::Error& error) {
    require(error.code() == OAR_STATUS_INVALID_ARGUMENT);
  }
}

// OAR_SIM_COPY_GBPS and OAR_SIM_LAUNCH_US: modelled times that fit.
void sim_rates(const std::string& text) {
  try {
    oar::sim::Timing timing = oar::sim::parse_timing(text, text);
    require(timing.copy_ns(uint64_t(1) << 40) <= oar::sim::kMaxModelledNs);
    require(timing.launch_ns <= oar::sim::kMaxModelledNs);
  } catch (const oar::sdk::Error& error) {
    require(error.code() == OAR_STATUS_INVALID_ARGUMENT);
  }
}

// OAR_SYNC_SPIN_US: a budget of at most a second (a bad value gets the
// default and a reason, which quotes the value as it is).
void spin_budget(const std::string& text) {
  std::string problem;
  auto budget = oar::sdk::parse_spin_budget(text.c_str(), &problem);
  require(budget.count() >= 0 && budget <= std::chrono::seconds(1));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 10) {
    case 0:
      devices(text);
      break;
    case 1:
      flag(text);
      break;
    case 2:
      path_list(text);
      break;
    case 3:
      probe_timeout(text);
      break;
    case 4:
      alloc_conf(text);
      break;
    case 5:
      sim_faults(text);
      break;
    case 6:
      sim_profile(text);
      break;
    case 7:
      sim_rates(text);
      break;
    case 8:
      require(oar::loader::clipped(text, data[0] % 64).size() <= 64 + 32 + 4 * 8);
      break;
    case 9:
      spin_budget(text);
      break;
  }
  return 0;
}
