// The cpu plugin's one exported symbol; the device itself is oar_cpu_device.
#include "cpu.h"

OAR_PLUGIN_DEFINE(oar::cpu::CpuPlugin, "cpu", "0.1.0", "OAR project")
