// The vulkan plugin next to plain Vulkan on the same device, in one run:
//
//   EmptyOp/OAR        a 1-element add through OAR + stream synchronize
//   EmptyOp/Native*    natively: the same dispatch as OAR's add
//                      (NativeSameDispatch, the baseline), an empty shader
//                      (Native), recorded per iteration (NativeRecorded), with
//                      a timeline semaphore instead of a fence (NativeTimeline);
//                      each a vkQueueSubmit + wait
//   EmptyOp/Paired     EmptyOp/OAR and the NativeSameDispatch variants
//                      (pre-recorded, recorded per op, pre-recorded with a
//                      polled timeline semaphore) interleaved in one loop:
//                      counters oar_us, native_us, ratio (against the
//                      pre-recorded one), native_rec_us, ratio_rec,
//                      native_poll_us, ratio_poll (medians), ratio_p10
//   CopyH2D64MiB/*     pageable host -> device: OAR copy_from_host +
//                      synchronize vs memcpy into a mapped staging buffer +
//                      vkCmdCopyBuffer + fence wait
//   CopyD2H64MiB/*     the reverse; Copy64MiB/Paired interleaves OAR, the
//                      native staged copy and (where device memory is
//                      host-visible) a native memcpy into it, with ratios
//   SmallOps/*         kOps back-to-back 256-element adds + one synchronize
//                      through OAR (batched command buffers), the same with
//                      a submit forced after each op (stream query), and
//                      native empty dispatches with one vkQueueSubmit each;
//                      "ops/s" is the figure. SmallOps/Paired alternates
//                      the two OAR variants in one loop and reports their
//                      ratio.
//   HostCost/Paired    kOps back-to-back 1-element adds + one synchronize
//                      through OAR against the same dispatches recorded
//                      natively (push descriptors, push constants, a barrier
//                      between dispatches, 64 per command buffer, one submit
//                      each, one fence wait), alternating in one loop:
//                      CPU time of the submitting thread per op (issue 18:
//                      <= 1.5 us through OAR).
//   Matmul/Paired      f32 matmul on vulkan and on the cpu plugin (OpenBLAS on
//                      the same cores) alternating in one loop: GFLOP/s
//                      medians and their ratio (issue 18: >= 0.6 at 1024^3).
//
// The native side uses its own instance and device (Vulkan 1.2, the first
// physical device with a compute queue) and the plugin's empty.comp SPIR-V.
#include <benchmark/benchmark.h>
#include <vulkan/vulkan.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/interleave.h"
#include "oar/oar.hpp"
#include "oar/ops.hpp"

// Vulkan structures are initialised as `T info{VK_STRUCTURE_TYPE_...}`, the
// rest zero (as the plugin is built with -Wno-missing-field-initializers).
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace {

using oar::bench::interleave;
using oar::bench::median;
using oar::bench::quantile;
using oar::bench::rates;

// glslc -mfmt=c of plugins/vulkan/shaders/empty.comp and of the f32 map.comp
// module the plugin's add kernel runs (target oar_vulkan_shaders).
const uint32_t kEmptyShader[] =
#include "empty.inc"
    ;
const uint32_t kMapShader[] =
#include "map_3_3_3.inc"
    ;

constexpr size_t kCopyBytes = 64u << 20;
constexpr int kOps = 1000;
constexpr int64_t kSmall = 256;

oar::Runtime& runtime() {
  static oar::Runtime* instance = [] {
    oar::RuntimeOptions options;
    options.use_environment = false;
    options.search_install_prefix = false;
    options.plugin_files = {OAR_BENCH_VULKAN_MANIFEST, OAR_BENCH_CPU_MANIFEST};
    return new oar::Runtime(options);  // lives until exit: benchmarks share it
  }();
  return *instance;
}

oar::Device& device() { return runtime().device("vulkan:0"); }

// The pause between two polls of a spin-wait, as plugins/common/host_wait.h
// has it: polling without one contends for the lock the driver's thread needs
// to signal completion.
void relax() {
  for (int i = 0; i < 16; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

void vk(VkResult result, const char* what) {
  if (result != VK_SUCCESS) throw std::runtime_error(std::string(what) + " failed");
}

// Plain Vulkan: a device, its compute queue, an empty pipeline, a command
// buffer and a fence.
struct Native {
  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkPhysicalDeviceMemoryProperties memory{};
  VkPhysicalDeviceVulkan12Features features12{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  uint32_t family = 0;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkCommandPool pool = VK_NULL_HANDLE;
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkShaderModule module = VK_NULL_HANDLE;

  Native() {
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.apiVersion = VK_API_VERSION_1_2;
    VkInstanceCreateInfo info{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    info.pApplicationInfo = &app;
    vk(vkCreateInstance(&info, nullptr, &instance), "vkCreateInstance");
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(instance, &count, nullptr);
    std::vector<VkPhysicalDevice> devices(count);
    vkEnumeratePhysicalDevices(instance, &count, devices.data());
    for (VkPhysicalDevice d : devices) {
      uint32_t n = 0;
      vkGetPhysicalDeviceQueueFamilyProperties(d, &n, nullptr);
      std::vector<VkQueueFamilyProperties> families(n);
      vkGetPhysicalDeviceQueueFamilyProperties(d, &n, families.data());
      for (uint32_t i = 0; i < n && physical == VK_NULL_HANDLE; ++i) {
        if (families[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
          physical = d;
          family = i;
        }
      }
    }
    if (physical == VK_NULL_HANDLE) throw std::runtime_error("no Vulkan compute device");
    vkGetPhysicalDeviceMemoryProperties(physical, &memory);
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue_info{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    queue_info.queueFamilyIndex = family;
    queue_info.queueCount = 1;
    queue_info.pQueuePriorities = &priority;
    VkDeviceCreateInfo device_info{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    features12.timelineSemaphore = VK_TRUE;
    device_info.pNext = &features12;
    const char* extensions[] = {VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME};
    device_info.enabledExtensionCount = 1;
    device_info.ppEnabledExtensionNames = extensions;
    device_info.queueCreateInfoCount = 1;
    device_info.pQueueCreateInfos = &queue_info;
    vk(vkCreateDevice(physical, &device_info, nullptr, &device), "vkCreateDevice");
    vkGetDeviceQueue(device, family, 0, &queue);
    VkCommandPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pool_info.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pool_info.queueFamilyIndex = family;
    vk(vkCreateCommandPool(device, &pool_info, nullptr, &pool), "vkCreateCommandPool");
    VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate.commandPool = pool;
    allocate.commandBufferCount = 1;
    vk(vkAllocateCommandBuffers(device, &allocate, &commands), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence_info{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vk(vkCreateFence(device, &fence_info, nullptr, &fence), "vkCreateFence");
    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = sizeof(kEmptyShader);
    module_info.pCode = kEmptyShader;
    vk(vkCreateShaderModule(device, &module_info, nullptr, &module), "vkCreateShaderModule");
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    vk(vkCreatePipelineLayout(device, &layout_info, nullptr, &layout), "vkCreatePipelineLayout");
    VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = module;
    pipeline_info.stage.pName = "main";
    pipeline_info.layout = layout;
    vk(vkCreateComputePipelines(device, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline),
       "vkCreateComputePipelines");
  }
  ~Native() {
    vkDeviceWaitIdle(device);
    vkDestroyPipeline(device, pipeline, nullptr);
    vkDestroyPipelineLayout(device, layout, nullptr);
    vkDestroyShaderModule(device, module, nullptr);
    vkDestroyFence(device, fence, nullptr);
    vkDestroyCommandPool(device, pool, nullptr);
    vkDestroyDevice(device, nullptr);
    vkDestroyInstance(instance, nullptr);
  }

  uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags flags) const {
    for (uint32_t i = 0; i < memory.memoryTypeCount; ++i) {
      if ((bits & (1u << i)) && (memory.memoryTypes[i].propertyFlags & flags) == flags) return i;
    }
    throw std::runtime_error("no memory type");
  }

  struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;
  };
  Buffer buffer(VkDeviceSize size, VkMemoryPropertyFlags flags) {
    Buffer b;
    VkBufferCreateInfo info{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    info.size = size;
    info.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                 VK_BUFFER_USAGE_STORAGE_BUFFER_BIT;
    vk(vkCreateBuffer(device, &info, nullptr, &b.buffer), "vkCreateBuffer");
    VkMemoryRequirements requirements;
    vkGetBufferMemoryRequirements(device, b.buffer, &requirements);
    VkMemoryAllocateInfo allocate{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    allocate.allocationSize = requirements.size;
    allocate.memoryTypeIndex = memory_type(requirements.memoryTypeBits, flags);
    vk(vkAllocateMemory(device, &allocate, nullptr, &b.memory), "vkAllocateMemory");
    vk(vkBindBufferMemory(device, b.buffer, b.memory, 0), "vkBindBufferMemory");
    if (flags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
      vk(vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped), "vkMapMemory");
    return b;
  }
  void destroy(Buffer& b) {
    vkDestroyBuffer(device, b.buffer, nullptr);
    vkFreeMemory(device, b.memory, nullptr);
  }

  void begin(VkCommandBufferUsageFlags flags = 0) {
    vkResetCommandBuffer(commands, 0);
    VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    begin.flags = flags;
    vk(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
  }
  void end() { vk(vkEndCommandBuffer(commands), "vkEndCommandBuffer"); }
  void submit(bool wait) {
    VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    info.commandBufferCount = 1;
    info.pCommandBuffers = &commands;
    vk(vkQueueSubmit(queue, 1, &info, wait ? fence : VK_NULL_HANDLE), "vkQueueSubmit");
    if (!wait) return;
    vk(vkWaitForFences(device, 1, &fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkResetFences(device, 1, &fence);
  }

  // A new timeline semaphore at 0 (the caller destroys it).
  VkSemaphore timeline_semaphore() {
    VkSemaphoreTypeCreateInfo type{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
    type.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
    VkSemaphoreCreateInfo info{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    info.pNext = &type;
    VkSemaphore semaphore = VK_NULL_HANDLE;
    vk(vkCreateSemaphore(device, &info, nullptr, &semaphore), "vkCreateSemaphore");
    return semaphore;
  }
  // Submits |buffer|, which sets |timeline| to |value| when it completes.
  void submit_signalling(VkCommandBuffer buffer, VkSemaphore timeline, uint64_t value) {
    VkTimelineSemaphoreSubmitInfo values{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
    values.signalSemaphoreValueCount = 1;
    values.pSignalSemaphoreValues = &value;
    VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    info.pNext = &values;
    info.commandBufferCount = 1;
    info.pCommandBuffers = &buffer;
    info.signalSemaphoreCount = 1;
    info.pSignalSemaphores = &timeline;
    vk(vkQueueSubmit(queue, 1, &info, VK_NULL_HANDLE), "vkQueueSubmit");
  }
};

Native& native() {
  static Native* instance = new Native();  // lives until exit
  return *instance;
}

std::vector<char>& host(size_t bytes) {
  static std::vector<char> buffer(kCopyBytes, 1);  // touched: no page faults in the loop
  return buffer.size() >= bytes ? buffer : (buffer.resize(bytes, 1), buffer);
}

void BM_EmptyOp_OAR(benchmark::State& state) {
  oar::Stream& stream = device().default_stream();
  oar::Tensor a = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  oar::Tensor b = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  oar::Tensor c = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  const oar::OpId add("add");
  oar::dispatch(stream, add, {&a, &b}, {&c});  // pipeline created before timing
  stream.synchronize();
  for (auto _ : state) {
    oar::dispatch(stream, add, {&a, &b}, {&c});
    stream.synchronize();
  }
}
BENCHMARK(BM_EmptyOp_OAR)->Name("EmptyOp/OAR")->UseRealTime()->Unit(benchmark::kMicrosecond);

void BM_EmptyOp_Native(benchmark::State& state) {
  Native& n = native();
  n.begin();
  vkCmdBindPipeline(n.commands, VK_PIPELINE_BIND_POINT_COMPUTE, n.pipeline);
  vkCmdDispatch(n.commands, 1, 1, 1);
  n.end();
  for (auto _ : state) n.submit(true);
}
BENCHMARK(BM_EmptyOp_Native)->Name("EmptyOp/Native")->UseRealTime()->Unit(benchmark::kMicrosecond);

// The very dispatch OAR's 1-element f32 add records (map.comp, operation 40,
// workgroup 64, the same bindings and parameter block), issued natively:
// either a pre-recorded command buffer with a descriptor set bound once, or
// (record_each) recorded for every op with push descriptors, as OAR must;
// then vkQueueSubmit + vkWaitForFences. The baseline for EmptyOp/OAR.
struct SameDispatch {
  static constexpr uint32_t kBindings = 10;
  Native& n = native();
  bool record_each;
  VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
  VkPipelineLayout layout = VK_NULL_HANDLE;
  VkShaderModule module = VK_NULL_HANDLE;
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  Native::Buffer tensors;
  Native::Buffer params;
  VkDescriptorBufferInfo infos[kBindings];
  VkWriteDescriptorSet writes[kBindings];
  uint32_t push[2] = {0, 1};
  PFN_vkCmdPushDescriptorSetKHR push_descriptors = nullptr;
  // Its own command buffer, so that both variants can run in one loop.
  VkCommandBuffer commands = VK_NULL_HANDLE;
  VkSemaphore timeline = VK_NULL_HANDLE;  // run_polled's, created on first use
  uint64_t value = 0;

  explicit SameDispatch(bool record_each_op) : record_each(record_each_op) {
    VkDevice d = n.device;
    VkCommandBufferAllocateInfo allocate_commands{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate_commands.commandPool = n.pool;
    allocate_commands.commandBufferCount = 1;
    vk(vkAllocateCommandBuffers(d, &allocate_commands, &commands), "vkAllocateCommandBuffers");
    VkDescriptorSetLayoutBinding bindings[kBindings];
    for (uint32_t i = 0; i < kBindings; ++i) {
      bindings[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
    }
    VkDescriptorSetLayoutCreateInfo set_info{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    if (record_each) set_info.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
    set_info.bindingCount = kBindings;
    set_info.pBindings = bindings;
    vk(vkCreateDescriptorSetLayout(d, &set_info, nullptr, &set_layout),
       "vkCreateDescriptorSetLayout");
    VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
    VkPipelineLayoutCreateInfo layout_info{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    layout_info.setLayoutCount = 1;
    layout_info.pSetLayouts = &set_layout;
    layout_info.pushConstantRangeCount = 1;
    layout_info.pPushConstantRanges = &range;
    vk(vkCreatePipelineLayout(d, &layout_info, nullptr, &layout), "vkCreatePipelineLayout");
    VkShaderModuleCreateInfo module_info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    module_info.codeSize = sizeof(kMapShader);
    module_info.pCode = kMapShader;
    vk(vkCreateShaderModule(d, &module_info, nullptr, &module), "vkCreateShaderModule");
    int32_t constants[2] = {64, 40};  // workgroup size, add
    VkSpecializationMapEntry entries[2] = {{0, 0, 4}, {1, 4, 4}};
    VkSpecializationInfo specialization{2, entries, sizeof(constants), constants};
    VkComputePipelineCreateInfo pipeline_info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
    pipeline_info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
    pipeline_info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
    pipeline_info.stage.module = module;
    pipeline_info.stage.pName = "main";
    pipeline_info.stage.pSpecializationInfo = &specialization;
    pipeline_info.layout = layout;
    vk(vkCreateComputePipelines(d, VK_NULL_HANDLE, 1, &pipeline_info, nullptr, &pipeline),
       "vkCreateComputePipelines");
    tensors = n.buffer(256, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    params =
        n.buffer(256, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    // map.comp's parameters for a 1-element add: n, ndim, shape, then offset
    // and strides of a, b, c, y (all zero), then two scalars.
    int32_t* words = static_cast<int32_t*>(params.mapped);
    std::memset(words, 0, 256);
    words[0] = 1;
    words[1] = 1;
    for (int i = 2; i < 10; ++i) words[i] = 1;
    words[60] = -1;  // the error word: no failure
    for (uint32_t i = 0; i < kBindings; ++i) {
      infos[i] = {i == 8 ? params.buffer : tensors.buffer, 0, VK_WHOLE_SIZE};
      if (i == 9) infos[i] = {params.buffer, 240, 4};
      writes[i] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
      writes[i].dstBinding = i;
      writes[i].descriptorCount = 1;
      writes[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[i].pBufferInfo = &infos[i];
    }
    if (record_each) {
      push_descriptors = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(
          vkGetDeviceProcAddr(d, "vkCmdPushDescriptorSetKHR"));
      return;
    }
    VkDescriptorPoolSize pool_size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kBindings};
    VkDescriptorPoolCreateInfo pool_info{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pool_info.maxSets = 1;
    pool_info.poolSizeCount = 1;
    pool_info.pPoolSizes = &pool_size;
    vk(vkCreateDescriptorPool(d, &pool_info, nullptr, &pool), "vkCreateDescriptorPool");
    VkDescriptorSetAllocateInfo allocate{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    allocate.descriptorPool = pool;
    allocate.descriptorSetCount = 1;
    allocate.pSetLayouts = &set_layout;
    VkDescriptorSet set = VK_NULL_HANDLE;
    vk(vkAllocateDescriptorSets(d, &allocate, &set), "vkAllocateDescriptorSets");
    for (VkWriteDescriptorSet& w : writes) w.dstSet = set;
    vkUpdateDescriptorSets(d, kBindings, writes, 0, nullptr);
    begin(0);
    vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
    vkCmdBindDescriptorSets(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, &set, 0,
                            nullptr);
    vkCmdPushConstants(commands, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
    vkCmdDispatch(commands, 1, 1, 1);
    vk(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
  }
  SameDispatch(const SameDispatch&) = delete;
  SameDispatch& operator=(const SameDispatch&) = delete;

  // Begins |commands|; the pool's RESET_COMMAND_BUFFER_BIT resets it implicitly.
  void begin(VkCommandBufferUsageFlags flags) {
    VkCommandBufferBeginInfo info{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    info.flags = flags;
    vk(vkBeginCommandBuffer(commands, &info), "vkBeginCommandBuffer");
  }

  // One round trip: (record,) submit, wait for the fence.
  void run() {
    if (record_each) {
      begin(VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
      vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      push_descriptors(commands, VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, kBindings, writes);
      vkCmdPushConstants(commands, layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(push), push);
      vkCmdDispatch(commands, 1, 1, 1);
      vk(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
    }
    VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    info.commandBufferCount = 1;
    info.pCommandBuffers = &commands;
    vk(vkQueueSubmit(n.queue, 1, &info, n.fence), "vkQueueSubmit");
    vk(vkWaitForFences(n.device, 1, &n.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkResetFences(n.device, 1, &n.fence);
  }

  // One round trip waited for as OAR's synchronize waits by default: the
  // submit signals a timeline semaphore whose counter is polled, with a
  // pause between polls (plugins/common/host_wait.h). Pre-recorded only.
  void run_polled() {
    if (timeline == VK_NULL_HANDLE) timeline = n.timeline_semaphore();
    n.submit_signalling(commands, timeline, ++value);
    uint64_t reached = 0;
    while (vkGetSemaphoreCounterValue(n.device, timeline, &reached) == VK_SUCCESS &&
           reached < value) {
      relax();
    }
  }

  ~SameDispatch() {
    VkDevice d = n.device;
    vkDeviceWaitIdle(d);
    vkFreeCommandBuffers(d, n.pool, 1, &commands);
    if (timeline != VK_NULL_HANDLE) vkDestroySemaphore(d, timeline, nullptr);
    if (pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(d, pool, nullptr);
    n.destroy(params);
    n.destroy(tensors);
    vkDestroyPipeline(d, pipeline, nullptr);
    vkDestroyShaderModule(d, module, nullptr);
    vkDestroyPipelineLayout(d, layout, nullptr);
    vkDestroyDescriptorSetLayout(d, set_layout, nullptr);
  }
};

void same_dispatch(benchmark::State& state, bool record_each) {
  SameDispatch same(record_each);
  for (auto _ : state) same.run();
}

void BM_EmptyOp_NativeSameDispatch(benchmark::State& state) { same_dispatch(state, false); }
// The same dispatch recorded for every op as OAR must (push descriptors, one
// command buffer per op).
void BM_EmptyOp_NativeSameDispatchRecorded(benchmark::State& state) { same_dispatch(state, true); }
BENCHMARK(BM_EmptyOp_NativeSameDispatchRecorded)
    ->Name("EmptyOp/NativeSameDispatchRecorded")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EmptyOp_NativeSameDispatch)
    ->Name("EmptyOp/NativeSameDispatch")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// EmptyOp/OAR and both EmptyOp/NativeSameDispatch variants interleaved: each
// iteration runs one OAR round trip, one native round trip from the
// pre-recorded command buffer and one native round trip that records the
// dispatch first (begin, bind, push descriptors, dispatch, end: what an
// op-by-op API must do), in a rotating order, each timed with steady_clock,
// so that all see the same machine state (lavapipe timings drift by up to 4x
// between runs). Counters (medians): oar_us; native_us and ratio against the
// pre-recorded baseline; native_rec_us and ratio_rec against the op-by-op
// one; native_poll_us and ratio_poll against the pre-recorded one waited
// for as OAR waits by default (a timeline semaphore polled, OAR_SYNC_SPIN_US):
// what OAR adds beyond the wait; ratio_best against the faster of the two
// pre-recorded ones. ratio = median OAR / median native;
// ratio_p10 compares the fastest tenth of OAR's and the pre-recorded ones.
void BM_EmptyOp_Paired(benchmark::State& state) {
  oar::Stream& stream = device().default_stream();
  oar::Tensor a = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  oar::Tensor b = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  oar::Tensor c = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  const oar::OpId add("add");
  oar::dispatch(stream, add, {&a, &b}, {&c});  // pipeline created before timing
  stream.synchronize();
  SameDispatch recorded(false);
  SameDispatch per_op(true);
  recorded.run();
  per_op.run();
  // Seconds per round trip: OAR, pre-recorded, recorded per op, polled.
  std::vector<std::vector<double>> seconds = interleave(
      state, {[&] {
                oar::dispatch(stream, add, {&a, &b}, {&c});
                stream.synchronize();
              },
              [&] { recorded.run(); }, [&] { per_op.run(); }, [&] { recorded.run_polled(); }});
  double o = median(seconds[0]) * 1e6, n = median(seconds[1]) * 1e6;
  double r = median(seconds[2]) * 1e6, p = median(seconds[3]) * 1e6;
  state.counters["native_poll_us"] = p;
  state.counters["ratio_poll"] = p > 0 ? o / p : 0;
  // Against the faster of the fence wait and the polled one (OAR waits
  // either way, choosing per stream by timing both: HostWait).
  state.counters["ratio_best"] = std::min(n, p) > 0 ? o / std::min(n, p) : 0;
  // The fastest tenth of each: what the ratio is when the machine is fast.
  double n10 = quantile(seconds[1], 0.1);
  state.counters["ratio_p10"] = n10 > 0 ? quantile(seconds[0], 0.1) / n10 : 0;
  state.counters["oar_us"] = o;
  state.counters["native_us"] = n;
  state.counters["ratio"] = n > 0 ? o / n : 0;
  state.counters["native_rec_us"] = r;
  state.counters["ratio_rec"] = r > 0 ? o / r : 0;
}
BENCHMARK(BM_EmptyOp_Paired)->Name("EmptyOp/Paired")->UseRealTime()->Unit(benchmark::kMicrosecond);

// The empty shader recorded again for every dispatch, as an op-by-op API must.
void BM_EmptyOp_NativeRecorded(benchmark::State& state) {
  Native& n = native();
  for (auto _ : state) {
    n.begin(VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT);
    vkCmdBindPipeline(n.commands, VK_PIPELINE_BIND_POINT_COMPUTE, n.pipeline);
    vkCmdDispatch(n.commands, 1, 1, 1);
    n.end();
    n.submit(true);
  }
}
BENCHMARK(BM_EmptyOp_NativeRecorded)
    ->Name("EmptyOp/NativeRecorded")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// The same dispatch tracked with a timeline semaphore (what OAR streams use)
// instead of a fence: the cost of the synchronisation primitive alone.
void BM_EmptyOp_NativeTimeline(benchmark::State& state) {
  Native& n = native();
  n.begin();
  vkCmdBindPipeline(n.commands, VK_PIPELINE_BIND_POINT_COMPUTE, n.pipeline);
  vkCmdDispatch(n.commands, 1, 1, 1);
  n.end();
  VkSemaphore timeline = n.timeline_semaphore();
  uint64_t value = 0;
  for (auto _ : state) {
    n.submit_signalling(n.commands, timeline, ++value);
    VkSemaphoreWaitInfo wait{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wait.semaphoreCount = 1;
    wait.pSemaphores = &timeline;
    wait.pValues = &value;
    vk(vkWaitSemaphores(n.device, &wait, UINT64_MAX), "vkWaitSemaphores");
  }
  vkDestroySemaphore(n.device, timeline, nullptr);
}
BENCHMARK(BM_EmptyOp_NativeTimeline)
    ->Name("EmptyOp/NativeTimeline")
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// A 64 MiB copy through OAR on the default stream, to completion: pageable
// host memory to a device buffer or back.
struct OarCopy {
  bool to_host;
  oar::Stream& stream = device().default_stream();
  oar::Buffer buffer = device().allocate(kCopyBytes);

  explicit OarCopy(bool to_host_) : to_host(to_host_) {
    stream.fill(buffer, 0, 3, kCopyBytes);
    stream.synchronize();
  }
  void run() {
    static std::vector<char> dst(kCopyBytes, 4);  // touched: no page faults in the loop
    if (to_host) {
      stream.copy_to_host(dst.data(), buffer, 0, kCopyBytes);
    } else {
      stream.copy_from_host(buffer, 0, host(kCopyBytes).data(), kCopyBytes);
    }
    stream.synchronize();
  }
};

// The same natively: memcpy into a mapped staging buffer + vkCmdCopyBuffer
// to a device-local buffer + fence wait, or the reverse (staging host-cached
// for reading). Records the native command buffer.
struct NativeCopy {
  bool to_host;
  Native& n = native();
  Native::Buffer staging;
  Native::Buffer device_buffer;

  explicit NativeCopy(bool to_host_) : to_host(to_host_) {
    staging = n.buffer(kCopyBytes, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                       VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                       (to_host ? VK_MEMORY_PROPERTY_HOST_CACHED_BIT : 0));
    device_buffer = n.buffer(kCopyBytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    std::memset(staging.mapped, 0, kCopyBytes);
    n.begin();  // touches the device buffer once, as the OAR side's fill
    vkCmdFillBuffer(n.commands, device_buffer.buffer, 0, kCopyBytes, 0x03030303u);
    n.end();
    n.submit(true);
    n.begin();
    VkBufferCopy region{0, 0, kCopyBytes};
    if (to_host) {
      vkCmdCopyBuffer(n.commands, device_buffer.buffer, staging.buffer, 1, &region);
    } else {
      vkCmdCopyBuffer(n.commands, staging.buffer, device_buffer.buffer, 1, &region);
    }
    n.end();
  }
  NativeCopy(const NativeCopy&) = delete;
  NativeCopy& operator=(const NativeCopy&) = delete;
  ~NativeCopy() {
    n.destroy(staging);
    n.destroy(device_buffer);
  }
  void run() {
    static std::vector<char> dst(kCopyBytes, 4);
    if (to_host) {
      n.submit(true);
      std::memcpy(dst.data(), staging.mapped, kCopyBytes);
    } else {
      std::memcpy(staging.mapped, host(kCopyBytes).data(), kCopyBytes);
      n.submit(true);
    }
  }
};

// The same natively into or out of device-local memory the host can address
// (lavapipe, integrated GPUs): one memcpy, no submit. What OAR's direct path
// does, without its stream ordering.
struct NativeDirectCopy {
  bool to_host;
  Native& n = native();
  Native::Buffer device_buffer;

  explicit NativeDirectCopy(bool to_host_) : to_host(to_host_) {
    device_buffer = n.buffer(
        kCopyBytes, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);  // throws if none
    std::memset(device_buffer.mapped, 3, kCopyBytes);
  }
  NativeDirectCopy(const NativeDirectCopy&) = delete;
  NativeDirectCopy& operator=(const NativeDirectCopy&) = delete;
  ~NativeDirectCopy() { n.destroy(device_buffer); }
  void run() {
    static std::vector<char> dst(kCopyBytes, 4);
    if (to_host) {
      std::memcpy(dst.data(), device_buffer.mapped, kCopyBytes);
    } else {
      std::memcpy(device_buffer.mapped, host(kCopyBytes).data(), kCopyBytes);
    }
  }
};

template <typename Copy>
void copy_64mib(benchmark::State& state, bool to_host) {
  Copy copy(to_host);
  for (auto _ : state) copy.run();
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(kCopyBytes));
}

void BM_CopyH2D_OAR(benchmark::State& state) { copy_64mib<OarCopy>(state, false); }
BENCHMARK(BM_CopyH2D_OAR)->Name("CopyH2D64MiB/OAR")->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_CopyH2D_Native(benchmark::State& state) { copy_64mib<NativeCopy>(state, false); }
BENCHMARK(BM_CopyH2D_Native)
    ->Name("CopyH2D64MiB/Native")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
void BM_CopyD2H_OAR(benchmark::State& state) { copy_64mib<OarCopy>(state, true); }
BENCHMARK(BM_CopyD2H_OAR)->Name("CopyD2H64MiB/OAR")->UseRealTime()->Unit(benchmark::kMillisecond);
void BM_CopyD2H_Native(benchmark::State& state) { copy_64mib<NativeCopy>(state, true); }
BENCHMARK(BM_CopyD2H_Native)
    ->Name("CopyD2H64MiB/Native")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// OAR and native copies interleaved in one loop (each first in turn), as the
// machine's speed drifts between runs. Argument: to_host. Counters (medians
// over the copies): oar_GB/s; native_GB/s and ratio against the staged
// native copy (the baseline: vkCmdCopyBuffer through staging); direct_GB/s
// and ratio_direct against a plain memcpy into or out of host-addressable
// device memory, where the device has it (OAR's path there).
void BM_Copy_Paired(benchmark::State& state) {
  const bool to_host = state.range(0) != 0;
  OarCopy oar_copy(to_host);
  NativeCopy native_copy(to_host);
  std::unique_ptr<NativeDirectCopy> direct_copy;
  try {
    direct_copy = std::make_unique<NativeDirectCopy>(to_host);
  } catch (const std::runtime_error&) {
    // no host-visible device-local memory: no direct baseline
  }
  std::vector<std::function<void()>> variants = {[&] { oar_copy.run(); },
                                                 [&] { native_copy.run(); }};
  if (direct_copy) variants.push_back([&] { direct_copy->run(); });
  std::vector<std::vector<double>> seconds = interleave(state, variants);
  seconds.resize(3);  // no direct samples: direct_GB/s and ratio_direct are 0
  double oar = median(rates(seconds[0], kCopyBytes / 1e9));
  double native = median(rates(seconds[1], kCopyBytes / 1e9));
  double direct = median(rates(seconds[2], kCopyBytes / 1e9));
  state.counters["oar_GB/s"] = oar;
  state.counters["native_GB/s"] = native;
  state.counters["ratio"] = native > 0 ? oar / native : 0;
  state.counters["direct_GB/s"] = direct;
  state.counters["ratio_direct"] = direct > 0 ? oar / direct : 0;
}
BENCHMARK(BM_Copy_Paired)
    ->Name("Copy64MiB/Paired")
    ->ArgName("to_host")
    ->Arg(0)
    ->Arg(1)
    ->Iterations(30)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void set_ops(benchmark::State& state) {
  state.counters["ops/s"] =
      benchmark::Counter(double(state.iterations()) * kOps, benchmark::Counter::kIsRate);
}

// Three 256-element f32 tensors on the device and kOps adds of them through
// OAR, then one synchronize; with |submit_each|, a stream query after each
// add submits the command buffer being recorded: one submit per op, the
// batching undone.
struct SmallOps {
  oar::Stream& stream = device().default_stream();
  oar::Tensor a = oar::Tensor::empty(device(), {kSmall}, oar::dtype::f32);
  oar::Tensor b = oar::Tensor::empty(device(), {kSmall}, oar::dtype::f32);
  oar::Tensor c = oar::Tensor::empty(device(), {kSmall}, oar::dtype::f32);
  const oar::OpId add{"add"};

  SmallOps() {
    oar::dispatch(stream, add, {&a, &b}, {&c});  // pipeline created before timing
    stream.synchronize();
  }
  void round(bool submit_each) {
    for (int i = 0; i < kOps; ++i) {
      oar::dispatch(stream, add, {&a, &b}, {&c});
      if (submit_each) benchmark::DoNotOptimize(stream.query());
    }
    stream.synchronize();
  }
};

void BM_SmallOps_OAR(benchmark::State& state) {
  SmallOps ops;
  for (auto _ : state) ops.round(false);
  set_ops(state);
}
BENCHMARK(BM_SmallOps_OAR)->Name("SmallOps/OAR")->UseRealTime()->Unit(benchmark::kMillisecond);

void BM_SmallOps_OAR_SubmitPerOp(benchmark::State& state) {
  SmallOps ops;
  for (auto _ : state) ops.round(true);
  set_ops(state);
}
BENCHMARK(BM_SmallOps_OAR_SubmitPerOp)
    ->Name("SmallOps/OARSubmitPerOp")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// Batched and submit-per-op rounds alternating in one loop (each first in
// turn), as the machine's speed drifts between runs: counters batched_ops/s
// and per_op_ops/s (medians over the rounds) and their ratio.
void BM_SmallOps_Paired(benchmark::State& state) {
  SmallOps ops;
  std::vector<std::vector<double>> seconds =
      interleave(state, {[&] { ops.round(false); }, [&] { ops.round(true); }});
  double batched = median(rates(seconds[0], kOps));
  double per_op = median(rates(seconds[1], kOps));
  state.counters["batched_ops/s"] = batched;
  state.counters["per_op_ops/s"] = per_op;
  state.counters["ratio"] = per_op > 0 ? batched / per_op : 0;
}
BENCHMARK(BM_SmallOps_Paired)
    ->Name("SmallOps/Paired")
    ->Iterations(30)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_SmallOps_NativeSubmitPerOp(benchmark::State& state) {
  Native& n = native();
  // Pending several times at once: one submit per op, one wait at the end.
  n.begin(VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT);
  vkCmdBindPipeline(n.commands, VK_PIPELINE_BIND_POINT_COMPUTE, n.pipeline);
  vkCmdDispatch(n.commands, 1, 1, 1);
  n.end();
  for (auto _ : state) {
    for (int i = 0; i + 1 < kOps; ++i) n.submit(false);
    n.submit(true);
  }
  set_ops(state);
}
BENCHMARK(BM_SmallOps_NativeSubmitPerOp)
    ->Name("SmallOps/NativeSubmitPerOp")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---- host cost per op -----------------------------------------------------

// CPU seconds the calling thread has used.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) * 1e-9;
}

// The dispatch of SameDispatch (OAR's 1-element f32 add) recorded kOps times
// natively, as a batching op-by-op runtime would at best: per op bind, push
// descriptors, push constants, dispatch and a compute-to-compute barrier,
// kBatch ops per command buffer, one vkQueueSubmit per command buffer and a
// fence wait after the last.
struct NativeBatches {
  static constexpr int kBatch = 64;
  SameDispatch same{true};
  std::vector<VkCommandBuffer> buffers;

  NativeBatches() {
    buffers.resize((kOps + kBatch - 1) / kBatch);
    VkCommandBufferAllocateInfo allocate{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    allocate.commandPool = same.n.pool;
    allocate.commandBufferCount = uint32_t(buffers.size());
    vk(vkAllocateCommandBuffers(same.n.device, &allocate, buffers.data()),
       "vkAllocateCommandBuffers");
  }
  NativeBatches(const NativeBatches&) = delete;
  NativeBatches& operator=(const NativeBatches&) = delete;
  ~NativeBatches() {
    vkDeviceWaitIdle(same.n.device);
    vkFreeCommandBuffers(same.n.device, same.n.pool, uint32_t(buffers.size()), buffers.data());
  }

  void round() {
    Native& n = same.n;
    int done = 0;
    for (size_t i = 0; i < buffers.size(); ++i) {
      VkCommandBuffer commands = buffers[i];
      VkCommandBufferBeginInfo begin{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
      begin.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
      vk(vkBeginCommandBuffer(commands, &begin), "vkBeginCommandBuffer");
      for (int j = 0; j < kBatch && done < kOps; ++j, ++done) {
        if (j > 0) {
          VkMemoryBarrier barrier{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
          barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
          barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
          vkCmdPipelineBarrier(commands, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                               VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0, nullptr, 0,
                               nullptr);
        }
        vkCmdBindPipeline(commands, VK_PIPELINE_BIND_POINT_COMPUTE, same.pipeline);
        same.push_descriptors(commands, VK_PIPELINE_BIND_POINT_COMPUTE, same.layout, 0,
                              SameDispatch::kBindings, same.writes);
        vkCmdPushConstants(commands, same.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(same.push),
                           same.push);
        vkCmdDispatch(commands, 1, 1, 1);
      }
      vk(vkEndCommandBuffer(commands), "vkEndCommandBuffer");
      bool last = i + 1 == buffers.size();
      VkSubmitInfo info{VK_STRUCTURE_TYPE_SUBMIT_INFO};
      info.commandBufferCount = 1;
      info.pCommandBuffers = &commands;
      vk(vkQueueSubmit(n.queue, 1, &info, last ? n.fence : VK_NULL_HANDLE), "vkQueueSubmit");
    }
    vk(vkWaitForFences(n.device, 1, &n.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    vkResetFences(n.device, 1, &n.fence);
  }
};

// kOps back-to-back 1-element f32 adds through OAR, then one synchronize,
// alternating with NativeBatches in one loop (each first in turn). Counters:
// oar_cpu_us_per_op and native_cpu_us_per_op, the CPU time of the submitting
// thread per op (medians over the rounds; the drivers' and OAR's worker
// threads are not counted), their ratio and difference, and the wall time per
// op of each.
void BM_HostCost_Paired(benchmark::State& state) {
  oar::Stream& stream = device().default_stream();
  oar::Tensor a = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  oar::Tensor b = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  oar::Tensor c = oar::Tensor::empty(device(), {1}, oar::dtype::f32);
  const oar::OpId add("add");
  NativeBatches native_batches;
  auto through_oar = [&] {
    for (int i = 0; i < kOps; ++i) oar::dispatch(stream, add, {&a, &b}, {&c});
    stream.synchronize();
  };
  through_oar();  // pipelines, command buffers and parameter blocks created
  native_batches.round();
  std::vector<double> cpu[2];
  auto timed = [&](int which, const std::function<void()>& body) {
    return [&cpu, which, body] {
      double start = thread_cpu_seconds();
      body();
      cpu[which].push_back(thread_cpu_seconds() - start);
    };
  };
  std::vector<std::vector<double>> wall =
      interleave(state, {timed(0, through_oar), timed(1, [&] { native_batches.round(); })});
  double o = median(cpu[0]) * 1e6 / kOps, n = median(cpu[1]) * 1e6 / kOps;
  state.counters["oar_cpu_us_per_op"] = o;
  state.counters["native_cpu_us_per_op"] = n;
  state.counters["ratio"] = n > 0 ? o / n : 0;
  state.counters["oar_minus_native_us"] = o - n;
  state.counters["oar_wall_us_per_op"] = median(wall[0]) * 1e6 / kOps;
  state.counters["native_wall_us_per_op"] = median(wall[1]) * 1e6 / kOps;
}
BENCHMARK(BM_HostCost_Paired)
    ->Name("HostCost/Paired")
    ->Iterations(40)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

// ---- matmul against the cpu plugin ----------------------------------------

// An f32 matmul [m, k] x [k, n] on |on|, inputs filled, run once (pipeline
// created, first-use costs paid).
struct MatmulOn {
  oar::Stream& stream;
  oar::Tensor a, b, c;
  MatmulOn(oar::Device& on, int64_t m, int64_t n, int64_t k)
      : stream(on.default_stream()),
        a(oar::Tensor::empty(on, {m, k}, oar::dtype::f32)),
        b(oar::Tensor::empty(on, {k, n}, oar::dtype::f32)),
        c(oar::Tensor::empty(on, {m, n}, oar::dtype::f32)) {
    std::vector<float> values(size_t(std::max(m, n) * k));
    for (size_t i = 0; i < values.size(); ++i) values[i] = float(i % 7) * 0.25f - 0.5f;
    a.copy_from_host(stream, values.data());
    b.copy_from_host(stream, values.data());
    run();
  }
  void run() {
    oar::ops::matmul(stream, a, b, c);
    stream.synchronize();
  }
};

// f32 matmul of shape (m, n, k) on vulkan and on the cpu plugin alternating
// in one loop, each first in turn: vulkan_GFLOP/s, cpu_GFLOP/s (medians)
// and ratio = vulkan / cpu.
void BM_Matmul_Paired(benchmark::State& state) {
  const int64_t m = state.range(0), n = state.range(1), k = state.range(2);
  MatmulOn on_vulkan(device(), m, n, k);
  MatmulOn on_cpu(runtime().device("cpu:0"), m, n, k);
  std::vector<std::vector<double>> seconds =
      interleave(state, {[&] { on_vulkan.run(); }, [&] { on_cpu.run(); }});
  const double flops = 2.0 * double(m) * double(n) * double(k) / 1e9;
  const double v = median(rates(seconds[0], flops));
  const double blas = median(rates(seconds[1], flops));
  state.counters["vulkan_GFLOP/s"] = v;
  state.counters["cpu_GFLOP/s"] = blas;
  state.counters["ratio"] = blas > 0 ? v / blas : 0;
}
BENCHMARK(BM_Matmul_Paired)
    ->Name("Matmul/Paired")
    ->ArgNames({"m", "n", "k"})
    ->Args({1024, 1024, 1024})
    ->Args({1000, 1000, 1000})
    ->Args({512, 512, 512})
    ->Iterations(10)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
