// The one place where Vulkan result codes become OAR statuses. Every Vulkan
// call that can fail goes through check(), so that a failure names the call
// and the VkResult (VK_ERROR_OUT_OF_DEVICE_MEMORY, ...) in its message.
#pragma once

#include <vulkan/vulkan.h>

#include <string>

#include "oar/oar.h"

namespace oar::vulkan {

// "VK_ERROR_DEVICE_LOST" for VK_ERROR_DEVICE_LOST; "VkResult(<n>)" if unknown.
const char* result_name(VkResult result);

// The OAR status a failed |result| stands for.
oar_status_t status_of(VkResult result);

// The error message check() reports: "<what> failed: <VkResult name>".
std::string describe(VkResult result, const std::string& what);

// Throws oar::sdk::Error(status_of(result), describe(result, what)) unless
// |result| is VK_SUCCESS or another non-negative (non-error) code.
void check(VkResult result, const char* what);

}  // namespace oar::vulkan
