// Capability profiles of the sim device, chosen with OAR_SIM_PROFILE.
#pragma once

#include <cstdint>
#include <string>

#include "oar/oar.h"

namespace oar::sim {

struct Profile {
  std::string name;
  int32_t devices = 1;
  oar_device_properties_t properties{};
};

// The names make_profile accepts, for messages: "gpu, npu, tiny".
const char* profile_names();

// The profile called |name| ("" is gpu); throws oar::sdk::Error
// (INVALID_ARGUMENT) naming the valid ones for any other name.
Profile make_profile(const std::string& name);

}  // namespace oar::sim
