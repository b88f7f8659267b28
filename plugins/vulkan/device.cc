// The logical device: one compute queue shared by all streams (behind a
// mutex), the features the shaders use, and the memory-type choice.
#include <string>

#include "vulkan.h"

namespace oar::vulkan {
namespace {

// The first memory type allowed by |bits| with all of |required|, preferring
// one that also has |preferred|; UINT32_MAX if none.
uint32_t choose_memory_type(const VkPhysicalDeviceMemoryProperties& memory, uint32_t bits,
                            VkMemoryPropertyFlags required, VkMemoryPropertyFlags preferred) {
  uint32_t fallback = UINT32_MAX;
  for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
    if ((bits & (1u << i)) == 0) continue;
    VkMemoryPropertyFlags flags = memory.memoryTypes[i].propertyFlags;
    if ((flags & required) != required) continue;
    if ((flags & preferred) == preferred) return i;
    if (fallback == UINT32_MAX) fallback = i;
  }
  return fallback;
}

constexpr VkBufferUsageFlags kUsage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT;

}  // namespace

uint32_t native_dtypes(const VkPhysicalDeviceFeatures& features,
                       const VkPhysicalDeviceShaderFloat16Int8Features& float16_int8,
                       const VkPhysicalDeviceShaderIntegerDotProductFeatures& dot,
                       const VkPhysicalDeviceShaderIntegerDotProductProperties& dot_speed) {
  uint32_t bits = 0;
  // Arithmetic on 16- and 64-bit floats in shaders (docs/abi.md, "Native
  // arithmetic"); storage alone (storageBuffer16BitAccess) does not count.
  if (float16_int8.shaderFloat16) bits |= OAR_DTYPE_SUPPORT_F16;
  if (features.shaderFloat64) bits |= OAR_DTYPE_SUPPORT_F64;
  // int8 dot products: shaderInt8 only allows 8-bit integers in shaders, and
  // every Vulkan 1.3 device must accept dot-product instructions; the
  // "Accelerated" properties say the device executes them faster than their
  // emulation, i.e. has them in hardware.
  bool dot_in_hardware = dot_speed.integerDotProduct8BitSignedAccelerated ||
                         dot_speed.integerDotProduct8BitUnsignedAccelerated ||
                         dot_speed.integerDotProduct8BitMixedSignednessAccelerated ||
                         dot_speed.integerDotProduct4x8BitPackedSignedAccelerated ||
                         dot_speed.integerDotProduct4x8BitPackedUnsignedAccelerated ||
                         dot_speed.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
  if (float16_int8.shaderInt8 && dot.shaderIntegerDotProduct && dot_in_hardware) {
    bits |= OAR_DTYPE_SUPPORT_INT8_DOT;
  }
  // bf16: no feature of the Vulkan headers here says the device computes in
  // it (VK_KHR_shader_bfloat16 is newer), so it is never reported.
  return bits;
}

uint32_t native_dtypes(VkPhysicalDevice handle, bool has_integer_dot_product) {
  VkPhysicalDeviceShaderFloat16Int8Features float16_int8{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES};
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES};
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &float16_int8;
  VkPhysicalDeviceShaderIntegerDotProductProperties dot_speed{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES};
  // The dot-product structs only where the device has the extension (or
  // Vulkan 1.3, which lists it): chained otherwise they are invalid usage.
  if (has_integer_dot_product) {
    float16_int8.pNext = &dot;
    VkPhysicalDeviceProperties2 properties{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    properties.pNext = &dot_speed;
    vk.GetPhysicalDeviceProperties2(handle, &properties);
  }
  vk.GetPhysicalDeviceFeatures2(handle, &features);
  return native_dtypes(features.features, float16_int8, dot, dot_speed);
}

oar_device_s* open_device(const PhysicalDevice& physical, int32_t index) {
  float priority = 1.0f;
  VkDeviceQueueCreateInfo queue{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  queue.queueFamilyIndex = physical.queue_family;
  queue.queueCount = 1;
  queue.pQueuePriorities = &priority;

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  f11.storageBuffer16BitAccess = physical.storage16;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.storageBuffer8BitAccess = VK_TRUE;
  f12.shaderInt8 = VK_TRUE;
  f12.shaderFloat16 = physical.float16;
  f12.timelineSemaphore = VK_TRUE;
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.features.shaderInt64 = VK_TRUE;
  features.features.shaderInt16 = VK_TRUE;
  features.pNext = &f11;
  const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};

  VkDeviceCreateInfo info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  info.pNext = &features;
  info.queueCreateInfoCount = 1;
  info.pQueueCreateInfos = &queue;
  info.enabledExtensionCount = 1;
  info.ppEnabledExtensionNames = extensions;

  auto device = std::make_unique<oar_device_s>();
  device->index = index;
  device->physical = &physical;
  VkResult result = vk.CreateDevice(physical.handle, &info, nullptr, &device->device);
  if (result != VK_SUCCESS) {
    throw oar::sdk::Error(
        result == VK_ERROR_OUT_OF_HOST_MEMORY || result == VK_ERROR_OUT_OF_DEVICE_MEMORY
            ? OAR_STATUS_RESOURCE_EXHAUSTED
            : OAR_STATUS_UNAVAILABLE,
        describe(result, std::string("vkCreateDevice for ") + physical.oar.name));
  }
  try {
    vk.GetDeviceQueue(device->device, physical.queue_family, 0, &device->queue);
    device->push_descriptor_set = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
        vk.GetDeviceProcAddr(device->device, "vkCmdPushDescriptorSetKHR"));
    oar::sdk::require(device->push_descriptor_set != nullptr, OAR_STATUS_UNAVAILABLE,
                      "vkGetDeviceProcAddr(vkCmdPushDescriptorSetKHR) returned NULL");
    // Device memory: device-local first. Staging and pinned memory: mappable
    // and coherent (no flushes), cached where possible for reads back.
    VkBuffer probe = VK_NULL_HANDLE;
    VkBufferCreateInfo probe_info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    probe_info.size = 256;
    probe_info.usage = kUsage;
    check(vk.CreateBuffer(device->device, &probe_info, nullptr, &probe), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    vk.GetBufferMemoryRequirements(device->device, probe, &requirements);
    vk.DestroyBuffer(device->device, probe, nullptr);
    device->device_memory_type = choose_memory_type(physical.memory, requirements.memoryTypeBits, 0,
                                                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    device->host_memory_type = choose_memory_type(
        physical.memory, requirements.memoryTypeBits,
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
        VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    oar::sdk::require(
        device->device_memory_type != UINT32_MAX && device->host_memory_type != UINT32_MAX,
        OAR_STATUS_UNAVAILABLE,
        std::string(physical.oar.name) +
            " has no memory type for storage buffers that is host-visible and "
            "coherent, which staging copies need");
    device->pipelines = std::make_unique<Pipelines>(device->device, physical);
    device->dummy = device->create_buffer(16, device->device_memory_type);
  } catch (...) {
    close_device(device.release());
    throw;
  }
  return device.release();
}

void close_device(oar_device_s* device) {
  if (device->device != VK_NULL_HANDLE) {
    vk.DeviceWaitIdle(device->device);
    device->destroy_buffer(device->dummy);
    device->pipelines.reset();
    vk.DestroyDevice(device->device, nullptr);
  }
  delete device;
}

}  // namespace oar::vulkan

using oar::vulkan::Buffer;
using oar::vulkan::check;
using oar::vulkan::vk;

Buffer oar_device_s::create_buffer(uint64_t size, uint32_t type) {
  Buffer b;
  b.size = size;
  VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  // A zero-size allocation still gets a buffer (Vulkan refuses size 0), and
  // whole 4-byte words let vkCmdFillBuffer reach the last byte.
  info.size = size == 0 ? 16 : (size + 15) / 16 * 16;
  info.usage = oar::vulkan::kUsage;
  info.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  check(vk.CreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
  VkMemoryRequirements requirements;
  vk.GetBufferMemoryRequirements(device, b.buffer, &requirements);
  VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  allocate.allocationSize = requirements.size;
  allocate.memoryTypeIndex = type;
  VkResult result = vk.AllocateMemory(device, &allocate, nullptr, &b.memory);
  if (result != VK_SUCCESS) {
    vk.DestroyBuffer(device, b.buffer, nullptr);
    check(result, ("vkAllocateMemory of " + std::to_string(requirements.size) + " bytes").c_str());
  }
  result = vk.BindBufferMemory(device, b.buffer, b.memory, 0);
  constexpr VkMemoryPropertyFlags kHostAddressable =
      VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  if (result == VK_SUCCESS &&
      (physical->memory.memoryTypes[type].propertyFlags & kHostAddressable) == kHostAddressable) {
    result = vk.MapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
  }
  if (result != VK_SUCCESS) {
    vk.DestroyBuffer(device, b.buffer, nullptr);
    vk.FreeMemory(device, b.memory, nullptr);
    check(result, "vkBindBufferMemory / vkMapMemory");
  }
  return b;
}

void oar_device_s::destroy_buffer(Buffer& b) {
  if (b.buffer != VK_NULL_HANDLE) vk.DestroyBuffer(device, b.buffer, nullptr);
  if (b.memory != VK_NULL_HANDLE) vk.FreeMemory(device, b.memory, nullptr);  // unmaps too
  b = Buffer{};
}

oar_memory_s* oar_device_s::find_pinned(const void* address, uint64_t size) {
  uintptr_t start = reinterpret_cast<uintptr_t>(address);
  std::lock_guard<std::mutex> lock(mutex);
  auto it = pinned.upper_bound(start);
  if (it == pinned.begin()) return nullptr;
  --it;
  oar_memory_s* memory = it->second;
  uint64_t inside = start - it->first;
  if (inside > memory->buffer.size || size > memory->buffer.size - inside) return nullptr;
  return memory;
}

bool oar_device_s::is_pinned(VkBuffer buffer) {
  if (pinned_count.load() == 0) return false;
  std::lock_guard<std::mutex> lock(mutex);
  return pinned_buffers.count(buffer) == 1;
}

void oar_device_s::require_allocation(oar_memory_s* memory, const char* what) {
  oar::vulkan::require_not_null(memory, what);
  std::lock_guard<std::mutex> lock(mutex);
  if (allocations.count(memory) != 1) {  // the message only on failure: a per-op check
    throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                          std::string(what) + " is not a live allocation of this vulkan device");
  }
}
