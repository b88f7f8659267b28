// The sample plugin's two halves: the runtime (plugin.cc: device, memory,
// copies; streams and events come from the SDK) and the kernels (kernels.cc).
#pragma once

#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"

namespace sample {

// Registers every kernel of the plugin into |table| through |registrar|.
// Kernels check their tensors' ranges against |allocations| and run on the
// call's stream (oar::sdk::QueueStreams).
void register_kernels(const oar_kernel_registrar_t* registrar, oar::sdk::KernelTable& table,
                      const oar::sdk::AllocationTable& allocations);

}  // namespace sample
