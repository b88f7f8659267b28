// Instance creation and discovery: every physical device with a compute queue
// and the features the operator set needs becomes an OAR device. Without a
// loader, a driver or such a device the plugin serves zero devices and says
// why; it never fails to load for that.
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "vulkan.h"

namespace oar::vulkan {
namespace {

std::atomic<uint64_t> g_validation_messages{0};

bool env_on(const char* name) {
  const char* value = secure_getenv(name);  // ignored in setuid processes, as everywhere in OAR
  return value != nullptr && std::strcmp(value, "0") != 0 && value[0] != '\0';
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT type,
                                             const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void* user_data) {
  (void)type;
  (void)user_data;
  if (severity < VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) return VK_FALSE;
  ++g_validation_messages;
  std::string text = std::string("oar vulkan validation: ") +
                     (data != nullptr && data->pMessage != nullptr ? data->pMessage : "?");
  // stderr as well as the host log: the conformance harness keeps a child's
  // stderr in test-output.log whatever OAR_LOG says.
  std::fprintf(stderr, "%s\n", text.c_str());
  oar::sdk::log(OAR_LOG_LEVEL_ERROR, text);
  return VK_FALSE;
}

bool has_extension(VkPhysicalDevice device, const char* name) {
  uint32_t count = 0;
  vk.EnumerateDeviceExtensionProperties(device, nullptr, &count, nullptr);
  std::vector<VkExtensionProperties> extensions(count);
  vk.EnumerateDeviceExtensionProperties(device, nullptr, &count, extensions.data());
  for (const auto& e : extensions) {
    if (std::strcmp(e.extensionName, name) == 0) return true;
  }
  return false;
}

bool has_layer(const char* name) {
  uint32_t count = 0;
  vk.EnumerateInstanceLayerProperties(&count, nullptr);
  std::vector<VkLayerProperties> layers(count);
  vk.EnumerateInstanceLayerProperties(&count, layers.data());
  for (const auto& l : layers) {
    if (std::strcmp(l.layerName, name) == 0) return true;
  }
  return false;
}

// Describes |handle| as an OAR device, or says in |why_not| why it cannot be.
bool describe_device(VkPhysicalDevice handle, PhysicalDevice* out, std::string* why_not) {
  PhysicalDevice d;
  d.handle = handle;
  vk.GetPhysicalDeviceProperties(handle, &d.properties);
  std::string name = d.properties.deviceName;
  if (d.properties.apiVersion < VK_API_VERSION_1_2) {
    *why_not = name + " supports Vulkan " +
               std::to_string(VK_API_VERSION_MAJOR(d.properties.apiVersion)) + "." +
               std::to_string(VK_API_VERSION_MINOR(d.properties.apiVersion)) +
               "; OAR needs 1.2 (timeline semaphores)";
    return false;
  }
  uint32_t family_count = 0;
  vk.GetPhysicalDeviceQueueFamilyProperties(handle, &family_count, nullptr);
  std::vector<VkQueueFamilyProperties> families(family_count);
  vk.GetPhysicalDeviceQueueFamilyProperties(handle, &family_count, families.data());
  bool found = false;
  // Prefer a compute-only family (dedicated hardware queues), else any with compute.
  for (int pass = 0; pass < 2 && !found; ++pass) {
    for (uint32_t i = 0; i < family_count; ++i) {
      if ((families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) == 0) continue;
      if (pass == 0 && (families[i].queueFlags & VK_QUEUE_GRAPHICS_BIT) != 0) continue;
      d.queue_family = i;
      found = true;
      break;
    }
  }
  if (!found) {
    *why_not = name + " has no compute queue";
    return false;
  }
  d.timestamps =
      families[d.queue_family].timestampValidBits > 0 && d.properties.limits.timestampPeriod > 0;

  VkPhysicalDeviceVulkan11Features f11{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES};
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f11.pNext = &f12;
  VkPhysicalDeviceFeatures2 features{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  features.pNext = &f11;
  vk.GetPhysicalDeviceFeatures2(handle, &features);
  std::string missing;
  if (!features.features.shaderInt64) missing += " shaderInt64";
  if (!features.features.shaderInt16) missing += " shaderInt16";
  if (!f12.shaderInt8) missing += " shaderInt8";
  if (!f12.storageBuffer8BitAccess) missing += " storageBuffer8BitAccess";
  if (!f12.timelineSemaphore) missing += " timelineSemaphore";
  if (!has_extension(handle, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME))
    missing += " " VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
  if (!missing.empty()) {
    *why_not = name + " lacks what i64 and bool tensors or streams need:" + missing;
    return false;
  }
  d.storage16 = f11.storageBuffer16BitAccess;
  d.float16 = f11.storageBuffer16BitAccess && f12.shaderFloat16;

  VkPhysicalDeviceSubgroupProperties subgroup{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  subgroup.pNext = &driver;
  VkPhysicalDeviceProperties2 properties2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  properties2.pNext = &subgroup;
  vk.GetPhysicalDeviceProperties2(handle, &properties2);
  d.subgroup_size = subgroup.subgroupSize;
  // matmul.comp broadcasts rows of a from lanes 0..7 of a subgroup.
  d.subgroup_broadcast = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                         (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BALLOT_BIT) != 0 &&
                         subgroup.subgroupSize >= 8 && subgroup.subgroupSize <= 64;
  d.max_groups = std::min<uint32_t>(65535, d.properties.limits.maxComputeWorkGroupCount[0]);
  if (driver.driverID == VK_DRIVER_ID_MESA_LLVMPIPE) d.loop_budget = 16384;
  vk.GetPhysicalDeviceMemoryProperties(handle, &d.memory);

  oar_device_properties_t& p = d.oar;
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  oar::sdk::copy_text(p.name, name);
  char vendor[32];
  std::snprintf(vendor, sizeof(vendor), "0x%04x", d.properties.vendorID);
  oar::sdk::copy_text(p.vendor, driver.driverName[0] != '\0'
                                    ? std::string(driver.driverName) + " (vendor " + vendor + ")"
                                    : std::string("vendor ") + vendor);
  oar::sdk::copy_text(p.driver_version, std::string(driver.driverInfo).empty()
                                            ? std::to_string(d.properties.driverVersion)
                                            : std::string(driver.driverInfo));
  switch (d.properties.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
      p.kind = OAR_DEVICE_KIND_CPU;
      break;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
      p.kind = OAR_DEVICE_KIND_GPU;
      break;
    default:
      p.kind = OAR_DEVICE_KIND_OTHER;
  }
  p.dlpack_device_type = kDLVulkan;
  // Device memory: the largest device-local heap.
  for (uint32_t i = 0; i < d.memory.memoryHeapCount; ++i) {
    if (d.memory.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      p.total_memory = std::max<uint64_t>(p.total_memory, d.memory.memoryHeaps[i].size);
  }
  VkPhysicalDeviceMaintenance3Properties m3{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &m3;
  vk.GetPhysicalDeviceProperties2(handle, &p2);
  // Kernels bind whole buffers as storage buffers, so no allocation may exceed
  // maxStorageBufferRange (128 MiB on lavapipe).
  p.max_allocation_size =
      std::min<uint64_t>({uint64_t(d.properties.limits.maxStorageBufferRange),
                          uint64_t(m3.maxMemoryAllocationSize), p.total_memory});
  p.min_alignment = std::max<uint64_t>(256, d.properties.limits.minStorageBufferOffsetAlignment);
  p.memory_kinds = OAR_MEMORY_KIND_DEVICE;
  for (uint32_t i = 0; i < d.memory.memoryTypeCount; ++i) {
    VkMemoryPropertyFlags f = d.memory.memoryTypes[i].propertyFlags;
    if ((f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) && (f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT))
      p.memory_kinds |= OAR_MEMORY_KIND_HOST_PINNED;
  }
  // f64 stays unclaimed: GLSL has no double exp, log, sin, ... to build the
  // transcendental operators from.
  p.dtypes = (d.float16 ? uint32_t(OAR_DTYPE_SUPPORT_F16) : 0u) |
             (d.storage16 ? uint32_t(OAR_DTYPE_SUPPORT_BF16) : 0u);
  p.native_dtypes = native_dtypes(
      handle, has_extension(handle, VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME));
  p.features = OAR_DEVICE_FEATURE_ASYNC_COPIES | OAR_DEVICE_FEATURE_HOST_CALLBACKS |
               (d.timestamps ? uint32_t(OAR_DEVICE_FEATURE_TIMING_EVENTS) : 0u);
  unsigned threads = std::thread::hardware_concurrency();
  p.compute_units = p.kind == OAR_DEVICE_KIND_CPU && threads > 0 ? threads : 1;
  *out = d;
  return true;
}

}  // namespace

uint64_t validation_messages() { return g_validation_messages.load(); }

VulkanPlugin::VulkanPlugin() {
  std::string why;
  if (!load_loader(&why)) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "vulkan: no devices: " + why);
    return;
  }
  bool validation = env_on("OAR_VULKAN_VALIDATION");
  std::vector<const char*> layers;
  std::vector<const char*> extensions;
  if (validation) {
    if (has_layer("VK_LAYER_KHRONOS_validation")) {
      layers.push_back("VK_LAYER_KHRONOS_validation");
      extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    } else {
      oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                    "vulkan: OAR_VULKAN_VALIDATION is set but VK_LAYER_KHRONOS_validation is not "
                    "installed (Debian: apt install vulkan-validationlayers); running without it");
      validation = false;
    }
  }
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "oar";
  app.pEngineName = "oar";
  app.apiVersion = VK_API_VERSION_1_2;
  VkDebugUtilsMessengerCreateInfoEXT messenger{
      VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  messenger.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                              VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  messenger.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                          VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  messenger.pfnUserCallback = &on_validation;
  VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  info.pApplicationInfo = &app;
  info.enabledLayerCount = uint32_t(layers.size());
  info.ppEnabledLayerNames = layers.data();
  info.enabledExtensionCount = uint32_t(extensions.size());
  info.ppEnabledExtensionNames = extensions.data();
  if (validation) info.pNext = &messenger;  // also covers instance creation itself
  VkResult result = vk.CreateInstance(&info, nullptr, &instance_);
  if (result != VK_SUCCESS) {
    instance_ = VK_NULL_HANDLE;
    oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                  "vulkan: no devices: " + describe(result, "vkCreateInstance") +
                      (result == VK_ERROR_INCOMPATIBLE_DRIVER
                           ? " (no Vulkan driver (ICD) found; install one, e.g. Debian's "
                             "mesa-vulkan-drivers, or check VK_ICD_FILENAMES / VK_DRIVER_FILES)"
                           : ""));
    return;
  }
  if (!load_instance_functions(instance_, &why)) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "vulkan: no devices: " + why);
    auto destroy = reinterpret_cast<PFN_vkDestroyInstance>(
        vk.GetInstanceProcAddr(instance_, "vkDestroyInstance"));
    if (destroy != nullptr) destroy(instance_, nullptr);
    instance_ = VK_NULL_HANDLE;
    return;
  }
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(
        vk.GetInstanceProcAddr(instance_, "vkCreateDebugUtilsMessengerEXT"));
    if (create != nullptr) create(instance_, &messenger, nullptr, &messenger_);
    // On stderr too, so that a log of the run shows the layer really was on.
    std::fprintf(stderr, "vulkan: VK_LAYER_KHRONOS_validation on\n");
    oar::sdk::log(OAR_LOG_LEVEL_INFO, "vulkan: VK_LAYER_KHRONOS_validation on");
  }
  uint32_t count = 0;
  result = vk.EnumeratePhysicalDevices(instance_, &count, nullptr);
  std::vector<VkPhysicalDevice> handles(count);
  if (result == VK_SUCCESS || result == VK_INCOMPLETE)
    result = vk.EnumeratePhysicalDevices(instance_, &count, handles.data());
  if (result < 0) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                  "vulkan: no devices: " + describe(result, "vkEnumeratePhysicalDevices"));
    return;
  }
  handles.resize(count);
  for (VkPhysicalDevice handle : handles) {
    PhysicalDevice d;
    std::string why_not;
    if (describe_device(handle, &d, &why_not)) {
      oar::sdk::log(OAR_LOG_LEVEL_INFO, "vulkan: device " + std::to_string(devices_.size()) + ": " +
                                            d.oar.name + ", subgroup size " +
                                            std::to_string(d.subgroup_size));
      devices_.push_back(d);
    } else {
      oar::sdk::log(OAR_LOG_LEVEL_INFO, "vulkan: skipping " + why_not);
    }
  }
  if (devices_.empty()) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                  "vulkan: no devices: none of the " + std::to_string(count) +
                      " Vulkan physical device(s) has a compute queue with the features OAR "
                      "needs (OAR_LOG=info lists why)");
  }
}

VulkanPlugin::~VulkanPlugin() {
  std::unordered_set<oar_device_s*> leaked;
  {
    std::lock_guard<std::mutex> lock(open_mutex_);
    leaked.swap(open_);
  }
  for (oar_device_s* device : leaked) release_device(device);
  if (messenger_ != VK_NULL_HANDLE) {
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(
        vk.GetInstanceProcAddr(instance_, "vkDestroyDebugUtilsMessengerEXT"));
    if (destroy != nullptr) destroy(instance_, messenger_, nullptr);
  }
  if (instance_ != VK_NULL_HANDLE) vk.DestroyInstance(instance_, nullptr);
}

void VulkanPlugin::require_index(int32_t index) const {
  oar::sdk::require(index >= 0 && size_t(index) < devices_.size(), OAR_STATUS_OUT_OF_RANGE,
                    "device index " + std::to_string(index) + " is out of range (" +
                        std::to_string(devices_.size()) + " device(s))");
}

void VulkanPlugin::device_count(int32_t* out_count) {
  require_not_null(out_count, "out_count");
  *out_count = int32_t(devices_.size());
}

void VulkanPlugin::device_properties(int32_t index, oar_device_properties_t* out_properties) {
  require_index(index);
  oar::sdk::copy_properties(devices_[size_t(index)].oar, out_properties);
}

void VulkanPlugin::device_open(int32_t index, oar_device_t* out_device) {
  require_index(index);
  require_not_null(out_device, "out_device");
  oar_device_s* device = open_device(devices_[size_t(index)], index);
  std::lock_guard<std::mutex> lock(open_mutex_);
  open_.insert(device);
  *out_device = device;
}

void VulkanPlugin::device_close(oar_device_t device) {
  if (device == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(open_mutex_);
    oar::sdk::require(open_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                      "device_close: not an open vulkan device");
  }
  release_device(device);
}

void VulkanPlugin::release_device(oar_device_s* device) {
  std::unordered_map<oar_stream_s*, std::shared_ptr<oar_stream_s>> streams;
  std::unordered_set<oar_event_s*> events;
  std::unordered_set<oar_memory_s*> allocations;
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    streams.swap(device->streams);
    events.swap(device->events);
    allocations.swap(device->allocations);
  }
  if (!streams.empty() || !events.empty() || !allocations.empty()) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "device closed with " + std::to_string(streams.size()) +
                                             " stream(s), " + std::to_string(events.size()) +
                                             " event(s) and " + std::to_string(allocations.size()) +
                                             " allocation(s) still alive; releasing them");
  }
  for (auto& [handle, stream] : streams) destroy_stream(std::move(stream));
  streams.clear();
  for (oar_event_s* event : events) destroy_event(event);
  for (oar_memory_s* memory : allocations) {
    device->destroy_buffer(memory->buffer);
    delete memory;
  }
  close_device(device);
}

void VulkanPlugin::device_synchronize(oar_device_t device) {
  require_not_null(device, "device");
  std::vector<std::shared_ptr<oar_stream_s>> streams;
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    for (auto& [handle, stream] : device->streams) streams.push_back(stream);
  }
  // Every stream first, then the first error: the device is idle when it returns.
  std::exception_ptr first;
  for (auto& stream : streams) {
    try {
      stream->synchronize();
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void VulkanPlugin::device_memory_info(oar_device_t device, uint64_t* out_free,
                                      uint64_t* out_total) {
  require_not_null(device, "device");
  require_not_null(out_free, "out_free");
  require_not_null(out_total, "out_total");
  uint64_t total = device->physical->oar.total_memory;
  uint64_t used = device->allocated_bytes.load();
  *out_total = total;
  *out_free = used < total ? total - used : 0;
}

}  // namespace oar::vulkan
