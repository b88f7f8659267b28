// The plugin path of oar::Communicator: the plugin's own collective slots.
#pragma once

#include <memory>
#include <vector>

#include "core/collective/engine.h"

namespace oar::detail {

// One engine per device, rank i on devices[i], made by the plugin's
// comm_create (called from one thread per rank, since it blocks until every
// rank joined). Throws UNIMPLEMENTED unless every device is of one plugin
// that lists OAR_DEVICE_FEATURE_COLLECTIVES and fills every collective slot.
std::vector<std::unique_ptr<CommEngine>> make_native_engines(const std::vector<Device*>& devices);

}  // namespace oar::detail
