// The Vulkan entry points the plugin uses, loaded at run time rather than
// linked: the plugin dlopens the loader (libvulkan.so.1, or the library named
// by OAR_VULKAN_LIBRARY; ignored in setuid processes), takes its
// vkGetInstanceProcAddr, and fills one dispatch table |vk| from it. On a
// machine without a loader the plugin still loads and serves zero devices,
// saying why. Compiled with VK_NO_PROTOTYPES: a call is vk.CmdDispatch(...).
//
// Device-level functions come from vkGetInstanceProcAddr(instance): the
// loader's entry points that dispatch on the device handle, valid for every
// device of the instance (and through any enabled layer).
#pragma once

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include <string>

namespace oar::vulkan {

// Before an instance exists: vkGetInstanceProcAddr(NULL, name).
// clang-format off
#define OAR_VK_GLOBAL_FUNCTIONS(X) \
  X(CreateInstance) X(EnumerateInstanceLayerProperties)

// With the instance: instance- and device-level functions.
#define OAR_VK_INSTANCE_FUNCTIONS(X)                                                              \
  X(AllocateCommandBuffers) X(AllocateMemory) X(BeginCommandBuffer) X(BindBufferMemory)           \
  X(CmdBindPipeline) X(CmdCopyBuffer) X(CmdDispatch) X(CmdFillBuffer) X(CmdPipelineBarrier)       \
  X(CmdPushConstants) X(CmdResetQueryPool) X(CmdWriteTimestamp) X(CreateBuffer)                   \
  X(CreateCommandPool) X(CreateComputePipelines) X(CreateDescriptorSetLayout) X(CreateDevice)     \
  X(CreatePipelineCache) X(CreatePipelineLayout) X(CreateQueryPool) X(CreateSemaphore)            \
  X(CreateShaderModule) X(DestroyBuffer) X(DestroyCommandPool) X(DestroyDescriptorSetLayout)      \
  X(DestroyDevice) X(DestroyInstance) X(DestroyPipeline) X(DestroyPipelineCache)                  \
  X(DestroyPipelineLayout) X(DestroyQueryPool) X(DestroySemaphore) X(DestroyShaderModule)         \
  X(DeviceWaitIdle) X(EndCommandBuffer) X(EnumerateDeviceExtensionProperties)                     \
  X(EnumeratePhysicalDevices) X(FreeMemory) X(GetBufferMemoryRequirements) X(GetDeviceProcAddr)   \
  X(GetDeviceQueue) X(GetPhysicalDeviceFeatures2) X(GetPhysicalDeviceMemoryProperties)            \
  X(GetPhysicalDeviceProperties) X(GetPhysicalDeviceProperties2)                                  \
  X(GetPhysicalDeviceQueueFamilyProperties) X(GetPipelineCacheData) X(GetQueryPoolResults)        \
  X(GetSemaphoreCounterValue) X(MapMemory) X(QueueSubmit) X(QueueWaitIdle)                        \
  X(ResetCommandBuffer) X(SignalSemaphore) X(WaitSemaphores)
// clang-format on

struct Api {
  PFN_vkGetInstanceProcAddr GetInstanceProcAddr = nullptr;
#define OAR_VK_POINTER(name) PFN_vk##name name = nullptr;
  OAR_VK_GLOBAL_FUNCTIONS(OAR_VK_POINTER)
  OAR_VK_INSTANCE_FUNCTIONS(OAR_VK_POINTER)
#undef OAR_VK_POINTER
};

// The table; filled by load_loader() and load_instance_functions().
extern Api vk;

// Opens the loader (once per process) and fills vk.GetInstanceProcAddr and
// the global functions. Returns false and explains why in |why| (which
// library, what failed, how to fix it) when it cannot.
bool load_loader(std::string* why);

// Fills the instance- and device-level functions for |instance|. Returns
// false and names the missing function in |why| when one is absent.
bool load_instance_functions(VkInstance instance, std::string* why);

}  // namespace oar::vulkan
