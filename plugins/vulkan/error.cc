#include "error.h"

#include "oar/sdk/plugin.hpp"

namespace oar::vulkan {

const char* result_name(VkResult result) {
  switch (result) {
#define OAR_VK_NAME(code) \
  case code:              \
    return #code;
    OAR_VK_NAME(VK_SUCCESS)
    OAR_VK_NAME(VK_NOT_READY)
    OAR_VK_NAME(VK_TIMEOUT)
    OAR_VK_NAME(VK_EVENT_SET)
    OAR_VK_NAME(VK_EVENT_RESET)
    OAR_VK_NAME(VK_INCOMPLETE)
    OAR_VK_NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
    OAR_VK_NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    OAR_VK_NAME(VK_ERROR_INITIALIZATION_FAILED)
    OAR_VK_NAME(VK_ERROR_DEVICE_LOST)
    OAR_VK_NAME(VK_ERROR_MEMORY_MAP_FAILED)
    OAR_VK_NAME(VK_ERROR_LAYER_NOT_PRESENT)
    OAR_VK_NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
    OAR_VK_NAME(VK_ERROR_FEATURE_NOT_PRESENT)
    OAR_VK_NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
    OAR_VK_NAME(VK_ERROR_TOO_MANY_OBJECTS)
    OAR_VK_NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
    OAR_VK_NAME(VK_ERROR_FRAGMENTED_POOL)
    OAR_VK_NAME(VK_ERROR_UNKNOWN)
    OAR_VK_NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
    OAR_VK_NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    OAR_VK_NAME(VK_ERROR_FRAGMENTATION)
    OAR_VK_NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    OAR_VK_NAME(VK_PIPELINE_COMPILE_REQUIRED)
    OAR_VK_NAME(VK_ERROR_SURFACE_LOST_KHR)
    OAR_VK_NAME(VK_ERROR_NATIVE_WINDOW_IN_USE_KHR)
    OAR_VK_NAME(VK_SUBOPTIMAL_KHR)
    OAR_VK_NAME(VK_ERROR_OUT_OF_DATE_KHR)
    OAR_VK_NAME(VK_ERROR_INCOMPATIBLE_DISPLAY_KHR)
    OAR_VK_NAME(VK_ERROR_VALIDATION_FAILED_EXT)
    OAR_VK_NAME(VK_ERROR_INVALID_SHADER_NV)
    OAR_VK_NAME(VK_ERROR_NOT_PERMITTED_KHR)
#undef OAR_VK_NAME
    default:
      return nullptr;
  }
}

oar_status_t status_of(VkResult result) {
  switch (result) {
    case VK_SUCCESS:
      return OAR_STATUS_OK;
    case VK_ERROR_OUT_OF_HOST_MEMORY:
    case VK_ERROR_OUT_OF_DEVICE_MEMORY:
    case VK_ERROR_OUT_OF_POOL_MEMORY:
    case VK_ERROR_FRAGMENTED_POOL:
    case VK_ERROR_FRAGMENTATION:
    case VK_ERROR_TOO_MANY_OBJECTS:
      return OAR_STATUS_RESOURCE_EXHAUSTED;
    case VK_ERROR_DEVICE_LOST:
    case VK_ERROR_INCOMPATIBLE_DRIVER:
    case VK_ERROR_INITIALIZATION_FAILED:
      return OAR_STATUS_UNAVAILABLE;
    case VK_ERROR_LAYER_NOT_PRESENT:
    case VK_ERROR_EXTENSION_NOT_PRESENT:
    case VK_ERROR_FEATURE_NOT_PRESENT:
    case VK_ERROR_FORMAT_NOT_SUPPORTED:
      return OAR_STATUS_UNIMPLEMENTED;
    case VK_TIMEOUT:
      return OAR_STATUS_DEADLINE_EXCEEDED;
    case VK_NOT_READY:
      return OAR_STATUS_FAILED_PRECONDITION;
    default:
      return OAR_STATUS_INTERNAL;
  }
}

std::string describe(VkResult result, const std::string& what) {
  const char* name = result_name(result);
  std::string text = name != nullptr ? name : "VkResult(" + std::to_string(int(result)) + ")";
  return what + " failed: " + text;
}

void check(VkResult result, const char* what) {
  if (result >= 0) return;
  throw oar::sdk::Error(status_of(result), describe(result, what));
}

}  // namespace oar::vulkan
