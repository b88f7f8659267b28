// Facts about the vulkan plugin that the conformance suite does not check:
// what happens without a driver, that back-to-back operations share command
// buffer submits, that large copies done on the host keep stream order, how
// VkResult codes become OAR statuses, and that native_dtypes is what the
// driver reports about shader arithmetic. The plugin is
// loaded through its C ABI with host services that record its logs.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <regex>
#include <string>
#include <vector>

#include "error.h"
#include "oar/oar.h"
#include "oar/sdk/plugin.hpp"
#include "vulkan.h"

namespace {

struct Logs {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::string joined() {
    std::lock_guard<std::mutex> lock(mutex);
    std::string all;
    for (const std::string& line : lines) all += line + "\n";
    return all;
  }
};

Logs& logs() {
  static Logs instance;
  return instance;
}

void record_log(void*, int32_t, const char* message) {
  std::lock_guard<std::mutex> lock(logs().mutex);
  logs().lines.push_back(message != nullptr ? message : "");
}

void record_error(void*, oar_status_t code, const char* message) {
  record_log(nullptr, OAR_LOG_LEVEL_ERROR,
             ("error " + std::to_string(code) + ": " + (message ? message : "")).c_str());
}

// The plugin library, loaded and initialized for one test.
class LoadedPlugin {
 public:
  LoadedPlugin() {
    handle_ = dlopen(OAR_VULKAN_PLUGIN_LIBRARY, RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) return;
    auto query = reinterpret_cast<const oar_plugin_api_t* (*)(uint32_t, uint32_t)>(
        dlsym(handle_, OAR_PLUGIN_ENTRY_SYMBOL));
    if (query == nullptr) return;
    api_ = query(OAR_ABI_MAJOR, OAR_ABI_MINOR);
    host_.struct_size = OAR_HOST_SERVICES_STRUCT_SIZE;
    host_.abi_major = OAR_ABI_MAJOR;
    host_.abi_minor = OAR_ABI_MINOR;
    host_.report_error = &record_error;
    host_.log = &record_log;
    initialized_ = api_ != nullptr && api_->initialize(&host_) == OAR_STATUS_OK;
  }
  ~LoadedPlugin() {
    if (initialized_) api_->finalize();
    if (handle_ != nullptr) dlclose(handle_);
  }
  bool ok() const { return initialized_; }
  const oar_plugin_api_t* api() const { return api_; }

 private:
  void* handle_ = nullptr;
  const oar_plugin_api_t* api_ = nullptr;
  oar_host_services_t host_{};
  bool initialized_ = false;
};

TEST(VulkanPluginTest, ZeroDevicesAndAMessageWithoutADriver) {
  // The loader finds no ICD: vkCreateInstance fails with
  // VK_ERROR_INCOMPATIBLE_DRIVER. (gtest_discover_tests runs each test in its
  // own process, so the variables touch no other test.)
  setenv("VK_ICD_FILENAMES", "/nonexistent/icd.json", 1);
  setenv("VK_DRIVER_FILES", "/nonexistent/icd.json", 1);
  LoadedPlugin plugin;
  ASSERT_TRUE(plugin.ok()) << "the plugin must load without a driver\n" << logs().joined();
  int32_t count = -1;
  ASSERT_EQ(plugin.api()->device_count(&count), OAR_STATUS_OK);
  EXPECT_EQ(count, 0);
  std::string text = logs().joined();
  EXPECT_NE(text.find("no devices"), std::string::npos) << text;
  EXPECT_NE(text.find("VK_ERROR_INCOMPATIBLE_DRIVER"), std::string::npos) << text;
  EXPECT_NE(text.find("mesa-vulkan-drivers"), std::string::npos) << "names a fix\n" << text;
  oar_device_properties_t properties{};
  properties.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  EXPECT_EQ(plugin.api()->device_properties(0, &properties), OAR_STATUS_OUT_OF_RANGE);
}

TEST(VulkanPluginTest, ZeroDevicesWithoutTheVulkanLoader) {
  // No libvulkan at all: the plugin opens the loader at run time, so it still
  // loads, serves zero devices and names the library and the fix. (Each test
  // runs in its own process: the variable touches no other test.)
  setenv("OAR_VULKAN_LIBRARY", "/nonexistent/libvulkan.so.1", 1);
  LoadedPlugin plugin;
  ASSERT_TRUE(plugin.ok()) << "the plugin must load without a Vulkan loader\n" << logs().joined();
  int32_t count = -1;
  ASSERT_EQ(plugin.api()->device_count(&count), OAR_STATUS_OK);
  EXPECT_EQ(count, 0);
  std::string text = logs().joined();
  EXPECT_NE(text.find("no devices"), std::string::npos) << text;
  EXPECT_NE(text.find("/nonexistent/libvulkan.so.1"), std::string::npos) << text;
  EXPECT_NE(text.find("libvulkan1"), std::string::npos) << "names a fix\n" << text;
  EXPECT_NE(text.find("mesa-vulkan-drivers"), std::string::npos) << "names a fix\n" << text;
}

// Captures the kernels the plugin registers, by "op/<dtype bits>...".
struct Kernel {
  oar_kernel_fn fn = nullptr;
  void* user_data = nullptr;
};
using Kernels = std::map<std::string, Kernel>;

oar_status_t capture(void* context, const oar_kernel_def_t* def) {
  std::string key = def->op_name;
  for (size_t i = 0; i < def->num_inputs + def->num_outputs; ++i) {
    key += "/" + std::to_string(def->dtypes[i].code) + ":" + std::to_string(def->dtypes[i].bits);
  }
  (*static_cast<Kernels*>(context))[key] = Kernel{def->fn, def->user_data};
  return OAR_STATUS_OK;
}

Kernels register_all(const oar_plugin_api_t* api) {
  Kernels kernels;
  oar_kernel_registrar_t registrar{OAR_KERNEL_REGISTRAR_STRUCT_SIZE, &kernels, &capture};
  EXPECT_EQ(api->register_kernels(&registrar), OAR_STATUS_OK);
  return kernels;
}

// The plugin logs "<n> operations in <m> submits" (debug) when a stream is
// destroyed; the submits counted are real vkQueueSubmit calls.
std::pair<long, long> stream_statistics(const std::string& text) {
  std::regex pattern("(\\d+) operations in (\\d+) submits");
  long operations = -1, submits = -1;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), pattern);
       it != std::sregex_iterator(); ++it) {
    operations = std::stol((*it)[1]);
    submits = std::stol((*it)[2]);
  }
  return {operations, submits};
}

// The plugin loaded, its first device open and a stream on it; skipped
// without a Vulkan device. A test that destroys the stream itself sets
// |stream| to null.
class VulkanDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(plugin.ok()) << logs().joined();
    api = plugin.api();
    int32_t count = 0;
    ASSERT_EQ(api->device_count(&count), OAR_STATUS_OK);
    if (count == 0) GTEST_SKIP() << "no Vulkan device (lavapipe: mesa-vulkan-drivers)";
    ASSERT_EQ(api->device_open(0, &device), OAR_STATUS_OK);
    ASSERT_EQ(api->stream_create(device, nullptr, &stream), OAR_STATUS_OK);
  }
  void TearDown() override {
    if (stream != nullptr) {
      EXPECT_EQ(api->stream_destroy(stream), OAR_STATUS_OK);
    }
    if (device != nullptr) {
      EXPECT_EQ(api->device_close(device), OAR_STATUS_OK);
    }
  }

  LoadedPlugin plugin;
  const oar_plugin_api_t* api = nullptr;
  oar_device_t device = nullptr;
  oar_stream_t stream = nullptr;
};

TEST_F(VulkanDeviceTest, BackToBackOperationsShareSubmits) {
  Kernels kernels = register_all(api);
  Kernel add = kernels["add/2:32/2:32/2:32"];
  ASSERT_NE(add.fn, nullptr);
  constexpr int64_t kN = 256;
  oar_memory_t memory = nullptr;
  ASSERT_EQ(api->memory_allocate(device, 3 * kN * sizeof(float), OAR_MEMORY_KIND_DEVICE, &memory),
            OAR_STATUS_OK);
  std::vector<float> ones(kN, 1.0f);
  ASSERT_EQ(api->memory_copy_h2d(stream, memory, 0, ones.data(), kN * sizeof(float)),
            OAR_STATUS_OK);
  ASSERT_EQ(api->memory_fill(stream, memory, kN * sizeof(float), 0, 2 * kN * sizeof(float)),
            OAR_STATUS_OK);

  // y += x, 100 times back to back, then one synchronize: y == 100.
  constexpr int kOps = 100;
  int64_t shape[1] = {kN};
  int64_t strides[1] = {1};
  DLTensor x{memory, {kDLVulkan, 0}, 1, {kDLFloat, 32, 1}, shape, strides, 0};
  DLTensor y = x;
  y.byte_offset = kN * sizeof(float);
  DLTensor inputs[2] = {y, x};
  oar_kernel_call_t call{};
  call.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  call.device = device;
  call.stream = stream;
  call.inputs = inputs;
  call.num_inputs = 2;
  call.outputs = &y;
  call.num_outputs = 1;
  call.user_data = add.user_data;
  for (int i = 0; i < kOps; ++i) ASSERT_EQ(add.fn(&call), OAR_STATUS_OK) << logs().joined();
  ASSERT_EQ(api->stream_synchronize(stream), OAR_STATUS_OK) << logs().joined();
  std::vector<float> result(kN, 0.0f);
  ASSERT_EQ(
      api->memory_copy_d2h(stream, result.data(), memory, kN * sizeof(float), kN * sizeof(float)),
      OAR_STATUS_OK);
  ASSERT_EQ(api->stream_synchronize(stream), OAR_STATUS_OK);
  EXPECT_EQ(result[0], float(kOps));
  EXPECT_EQ(result[kN - 1], float(kOps));

  ASSERT_EQ(api->stream_destroy(stream), OAR_STATUS_OK);  // logs the statistics
  stream = nullptr;
  auto [operations, submits] = stream_statistics(logs().joined());
  // 1 copy + 1 fill + 100 adds + 1 read back, in batches of at most 64.
  EXPECT_EQ(operations, 2 + kOps + 1) << logs().joined();
  EXPECT_GT(submits, 0);
  EXPECT_LE(submits, 4) << "expected batched submits, got one per operation?";
  EXPECT_LT(submits, operations);
  std::printf("%ld operations in %ld submits\n", operations, submits);
  ASSERT_EQ(api->memory_free(device, memory), OAR_STATUS_OK);
}

TEST_F(VulkanDeviceTest, OutOfRangeIndexFailsTheStreamFromThatWorkOn) {
  Kernels kernels = register_all(api);
  Kernel index_select = kernels["index_select/2:32/0:64/2:32"];
  ASSERT_NE(index_select.fn, nullptr);
  oar_event_t before = nullptr, after = nullptr;
  ASSERT_EQ(api->event_create(device, 0, &before), OAR_STATUS_OK);
  ASSERT_EQ(api->event_create(device, 0, &after), OAR_STATUS_OK);
  // x: 4 floats; index: {1, 4} (4 is out of [0, 4)); y: 2 floats.
  oar_memory_t memory = nullptr;
  ASSERT_EQ(api->memory_allocate(device, 64, OAR_MEMORY_KIND_DEVICE, &memory), OAR_STATUS_OK);
  float x_host[4] = {1, 2, 3, 4};
  int64_t index_host[2] = {1, 4};
  ASSERT_EQ(api->memory_copy_h2d(stream, memory, 0, x_host, sizeof(x_host)), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_copy_h2d(stream, memory, 16, index_host, sizeof(index_host)),
            OAR_STATUS_OK);
  ASSERT_EQ(api->event_record(before, stream), OAR_STATUS_OK);
  int64_t x_shape[1] = {4}, index_shape[1] = {2}, y_shape[1] = {2}, strides[1] = {1};
  DLTensor inputs[2] = {{memory, {kDLVulkan, 0}, 1, {kDLFloat, 32, 1}, x_shape, strides, 0},
                        {memory, {kDLVulkan, 0}, 1, {kDLInt, 64, 1}, index_shape, strides, 16}};
  DLTensor y{memory, {kDLVulkan, 0}, 1, {kDLFloat, 32, 1}, y_shape, strides, 32};
  oar_kernel_call_t call{};
  call.struct_size = OAR_KERNEL_CALL_STRUCT_SIZE;
  call.device = device;
  call.stream = stream;
  call.inputs = inputs;
  call.num_inputs = 2;
  call.outputs = &y;
  call.num_outputs = 1;
  call.user_data = index_select.user_data;
  // The call itself succeeds: the index is only read on the device.
  ASSERT_EQ(index_select.fn(&call), OAR_STATUS_OK) << logs().joined();
  ASSERT_EQ(api->event_record(after, stream), OAR_STATUS_OK);
  EXPECT_EQ(api->stream_synchronize(stream), OAR_STATUS_OUT_OF_RANGE);
  EXPECT_NE(logs().joined().find("out of range"), std::string::npos) << logs().joined();
  EXPECT_EQ(api->event_synchronize(before), OAR_STATUS_OK);
  EXPECT_EQ(api->event_synchronize(after), OAR_STATUS_OUT_OF_RANGE);
  // A failed stream stays failed.
  bool idle = false;
  EXPECT_EQ(api->stream_query(stream, &idle), OAR_STATUS_OUT_OF_RANGE);
  ASSERT_EQ(api->event_destroy(before), OAR_STATUS_OK);
  ASSERT_EQ(api->event_destroy(after), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_free(device, memory), OAR_STATUS_OK);
}

// Holds a stream until the test opens it: everything after it is queued
// before any of it runs.
struct Gate {
  std::mutex mutex;
  std::condition_variable changed;
  bool open = false;
  static void wait(void* self, oar_status_t) {
    auto* gate = static_cast<Gate*>(self);
    std::unique_lock<std::mutex> lock(gate->mutex);
    gate->changed.wait(lock, [gate] { return gate->open; });
  }
  void release() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      open = true;
    }
    changed.notify_all();
  }
};

TEST_F(VulkanDeviceTest, LargeCopiesKeepStreamOrderWithDeviceWork) {
  // Copies of 1 MiB and more between pageable memory and host-addressable
  // device memory (lavapipe's) are memcpys on the stream's worker, not
  // device copies: they must still run after the device work before them
  // and before the device work after them.
  constexpr uint64_t kBig = (2u << 20) + 3;  // odd, above the direct-copy size
  constexpr uint64_t kAt = 5;                // odd offset inside each allocation
  oar_memory_t a = nullptr, b = nullptr;
  ASSERT_EQ(api->memory_allocate(device, kBig + 16, OAR_MEMORY_KIND_DEVICE, &a), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_allocate(device, kBig + 16, OAR_MEMORY_KIND_DEVICE, &b), OAR_STATUS_OK);
  std::vector<uint8_t> pattern(kBig);
  for (uint64_t i = 0; i < kBig; ++i) pattern[i] = uint8_t(i * 131 + 7);
  std::vector<uint8_t> copied(kBig, 0), refilled(kBig, 0);

  Gate gate;
  ASSERT_EQ(api->stream_add_host_callback(stream, &Gate::wait, &gate), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_fill(stream, a, kAt, 0x11, kBig), OAR_STATUS_OK);  // before the upload
  ASSERT_EQ(api->memory_copy_h2d(stream, a, kAt, pattern.data(), kBig), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_copy_d2d(stream, b, kAt, a, kAt, kBig), OAR_STATUS_OK);  // reads it
  ASSERT_EQ(api->memory_fill(stream, a, kAt, 0x33, kBig), OAR_STATUS_OK);        // after the d2d
  ASSERT_EQ(api->memory_copy_d2h(stream, copied.data(), b, kAt, kBig), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_copy_d2h(stream, refilled.data(), a, kAt, kBig), OAR_STATUS_OK);
  gate.release();
  ASSERT_EQ(api->stream_synchronize(stream), OAR_STATUS_OK) << logs().joined();

  EXPECT_TRUE(copied == pattern) << "the upload or the read-back ran out of order";
  EXPECT_EQ(std::count(refilled.begin(), refilled.end(), 0x33), int64_t(kBig))
      << "the read-back ran before the device's fill";

  ASSERT_EQ(api->memory_free(device, a), OAR_STATUS_OK);
  ASSERT_EQ(api->memory_free(device, b), OAR_STATUS_OK);
}

TEST(VulkanPluginTest, VkResultBecomesTheMatchingStatusWithItsName) {
  using oar::vulkan::check;
  EXPECT_NO_THROW(check(VK_SUCCESS, "vkQueueSubmit"));
  EXPECT_NO_THROW(check(VK_INCOMPLETE, "vkEnumeratePhysicalDevices"));  // not an error
  struct Case {
    VkResult result;
    oar_status_t status;
    const char* name;
  };
  const Case cases[] = {
      {VK_ERROR_OUT_OF_DEVICE_MEMORY, OAR_STATUS_RESOURCE_EXHAUSTED,
       "VK_ERROR_OUT_OF_DEVICE_MEMORY"},
      {VK_ERROR_OUT_OF_HOST_MEMORY, OAR_STATUS_RESOURCE_EXHAUSTED, "VK_ERROR_OUT_OF_HOST_MEMORY"},
      {VK_ERROR_DEVICE_LOST, OAR_STATUS_UNAVAILABLE, "VK_ERROR_DEVICE_LOST"},
      {VK_ERROR_INCOMPATIBLE_DRIVER, OAR_STATUS_UNAVAILABLE, "VK_ERROR_INCOMPATIBLE_DRIVER"},
      {VK_ERROR_EXTENSION_NOT_PRESENT, OAR_STATUS_UNIMPLEMENTED, "VK_ERROR_EXTENSION_NOT_PRESENT"},
      {VK_ERROR_UNKNOWN, OAR_STATUS_INTERNAL, "VK_ERROR_UNKNOWN"},
      {VkResult(-123456), OAR_STATUS_INTERNAL, "VkResult(-123456)"},
  };
  for (const Case& c : cases) {
    try {
      check(c.result, "vkAllocateMemory");
      ADD_FAILURE() << c.name << " did not throw";
    } catch (const oar::sdk::Error& e) {
      EXPECT_EQ(e.code(), c.status) << c.name;
      EXPECT_EQ(std::string(e.what()), std::string("vkAllocateMemory failed: ") + c.name);
    }
  }
}

// native_dtypes (docs/abi.md, "Native arithmetic") from the features: f16 and
// f64 arithmetic in shaders, int8 dot products only where the device says
// they are accelerated; 8-bit integers or 16-bit storage alone are not.
TEST(VulkanPluginTest, NativeDtypesFollowTheShaderArithmeticFeatures) {
  using oar::vulkan::native_dtypes;
  VkPhysicalDeviceFeatures core{};
  VkPhysicalDeviceShaderFloat16Int8Features small{};
  VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
  VkPhysicalDeviceShaderIntegerDotProductProperties speed{};
  EXPECT_EQ(native_dtypes(core, small, dot, speed), 0u);
  core.shaderFloat64 = VK_TRUE;
  EXPECT_EQ(native_dtypes(core, small, dot, speed), uint32_t(OAR_DTYPE_SUPPORT_F64));
  core.shaderFloat64 = VK_FALSE;
  core.shaderInt16 = VK_TRUE;  // 16-bit integers are no float arithmetic
  small.shaderFloat16 = VK_TRUE;
  EXPECT_EQ(native_dtypes(core, small, dot, speed), uint32_t(OAR_DTYPE_SUPPORT_F16));
  small.shaderFloat16 = VK_FALSE;
  small.shaderInt8 = VK_TRUE;
  dot.shaderIntegerDotProduct = VK_TRUE;  // accepted, but emulated
  EXPECT_EQ(native_dtypes(core, small, dot, speed), 0u);
  speed.integerDotProduct4x8BitPackedSignedAccelerated = VK_TRUE;
  EXPECT_EQ(native_dtypes(core, small, dot, speed), uint32_t(OAR_DTYPE_SUPPORT_INT8_DOT));
  small.shaderInt8 = VK_FALSE;  // no 8-bit integers in shaders at all
  EXPECT_EQ(native_dtypes(core, small, dot, speed), 0u);
  small.shaderInt8 = VK_TRUE;
  dot.shaderIntegerDotProduct = VK_FALSE;
  speed.integerDotProduct4x8BitPackedSignedAccelerated = VK_FALSE;
  speed.integerDotProduct8BitUnsignedAccelerated = VK_TRUE;
  EXPECT_EQ(native_dtypes(core, small, dot, speed), 0u);
}

// What the Vulkan driver itself reports, asked through the loader apart from
// the plugin: for every device the plugin serves, native_dtypes has f16 exactly
// when the driver has shaderFloat16, f64 exactly when it has shaderFloat64,
// int8_dot exactly when it has 8-bit integers, dot products and one of them
// accelerated, and never bf16.
TEST(VulkanPluginTest, NativeDtypesAreWhatTheDriverReports) {
  LoadedPlugin plugin;
  ASSERT_TRUE(plugin.ok()) << logs().joined();
  int32_t count = 0;
  ASSERT_EQ(plugin.api()->device_count(&count), OAR_STATUS_OK);
  if (count == 0) GTEST_SKIP() << "no Vulkan device (lavapipe: mesa-vulkan-drivers)";

  void* loader = dlopen("libvulkan.so.1", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(loader, nullptr) << "the plugin found devices, so the loader is there";
  auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(loader, "vkGetInstanceProcAddr"));
  ASSERT_NE(get, nullptr);
  auto create = reinterpret_cast<PFN_vkCreateInstance>(get(nullptr, "vkCreateInstance"));
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo info{};
  info.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  info.pApplicationInfo = &app;
  VkInstance instance = VK_NULL_HANDLE;
  ASSERT_EQ(create(&info, nullptr, &instance), VK_SUCCESS);
#define OAR_TEST_VK(name) auto name = reinterpret_cast<PFN_vk##name>(get(instance, "vk" #name))
  OAR_TEST_VK(DestroyInstance);
  OAR_TEST_VK(EnumeratePhysicalDevices);
  OAR_TEST_VK(GetPhysicalDeviceProperties);
  OAR_TEST_VK(GetPhysicalDeviceProperties2);
  OAR_TEST_VK(GetPhysicalDeviceFeatures2);
  OAR_TEST_VK(EnumerateDeviceExtensionProperties);
#undef OAR_TEST_VK
  uint32_t physical_count = 0;
  EnumeratePhysicalDevices(instance, &physical_count, nullptr);
  std::vector<VkPhysicalDevice> physical(physical_count);
  EnumeratePhysicalDevices(instance, &physical_count, physical.data());

  for (int32_t index = 0; index < count; ++index) {
    oar_device_properties_t p{};
    p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    ASSERT_EQ(plugin.api()->device_properties(index, &p), OAR_STATUS_OK);
    VkPhysicalDevice match = VK_NULL_HANDLE;
    for (VkPhysicalDevice candidate : physical) {
      VkPhysicalDeviceProperties properties{};
      GetPhysicalDeviceProperties(candidate, &properties);
      if (std::string(properties.deviceName) == p.name) match = candidate;
    }
    ASSERT_NE(match, VK_NULL_HANDLE) << p.name << " is not among the loader's devices";

    uint32_t extension_count = 0;
    EnumerateDeviceExtensionProperties(match, nullptr, &extension_count, nullptr);
    std::vector<VkExtensionProperties> extensions(extension_count);
    EnumerateDeviceExtensionProperties(match, nullptr, &extension_count, extensions.data());
    bool has_dot = std::any_of(extensions.begin(), extensions.end(), [](const auto& e) {
      return std::string(e.extensionName) == VK_KHR_SHADER_INTEGER_DOT_PRODUCT_EXTENSION_NAME;
    });
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot{};
    dot.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES;
    VkPhysicalDeviceShaderFloat16Int8Features small{};
    small.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
    if (has_dot) small.pNext = &dot;
    VkPhysicalDeviceFeatures2 features{};
    features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    features.pNext = &small;
    GetPhysicalDeviceFeatures2(match, &features);
    VkPhysicalDeviceShaderIntegerDotProductProperties speed{};
    speed.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_PROPERTIES;
    if (has_dot) {
      VkPhysicalDeviceProperties2 properties{};
      properties.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
      properties.pNext = &speed;
      GetPhysicalDeviceProperties2(match, &properties);
    }
    const bool dot_accelerated = speed.integerDotProduct8BitSignedAccelerated ||
                                 speed.integerDotProduct8BitUnsignedAccelerated ||
                                 speed.integerDotProduct8BitMixedSignednessAccelerated ||
                                 speed.integerDotProduct4x8BitPackedSignedAccelerated ||
                                 speed.integerDotProduct4x8BitPackedUnsignedAccelerated ||
                                 speed.integerDotProduct4x8BitPackedMixedSignednessAccelerated;
    std::printf(
        "%s: shaderFloat16 %d, shaderFloat64 %d, shaderInt8 %d, integer dot products %d "
        "(accelerated %d); native_dtypes 0x%x\n",
        p.name, small.shaderFloat16, features.features.shaderFloat64, small.shaderInt8,
        dot.shaderIntegerDotProduct, dot_accelerated, p.native_dtypes);
    EXPECT_EQ((p.native_dtypes & OAR_DTYPE_SUPPORT_F16) != 0, small.shaderFloat16 == VK_TRUE)
        << p.name;
    EXPECT_EQ((p.native_dtypes & OAR_DTYPE_SUPPORT_F64) != 0,
              features.features.shaderFloat64 == VK_TRUE)
        << p.name;
    EXPECT_EQ((p.native_dtypes & OAR_DTYPE_SUPPORT_INT8_DOT) != 0,
              small.shaderInt8 && dot.shaderIntegerDotProduct && dot_accelerated)
        << p.name;
    EXPECT_EQ(p.native_dtypes & OAR_DTYPE_SUPPORT_BF16, 0u) << p.name;
  }
  DestroyInstance(instance, nullptr);
  dlclose(loader);
}

}  // namespace
