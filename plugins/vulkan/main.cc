// The vulkan plugin's one exported symbol; the device is oar_vulkan_device.
#include "vulkan.h"

OAR_PLUGIN_DEFINE(oar::vulkan::VulkanPlugin, "vulkan", "0.1.0", "OAR project")
