// Shader modules and compute pipelines. Every pipeline shares one layout:
// bindings 0..7 for tensors, 8 for the parameter block and 9 for the error
// word, all storage buffers written with push descriptors, and 8 bytes of
// push constants (parameter base, batch value). Specialisation constant 0 is
// the workgroup size, 1 the operation. The VkPipelineCache is loaded from
// and saved to the plugin's disk cache, because the conformance harness (and
// any short-lived process) would otherwise compile every pipeline again.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "oar/sdk/disk_cache.hpp"
#include "shaders.h"
#include "vulkan.h"

namespace oar::vulkan {
namespace {

constexpr uint32_t kBindings = 10;
constexpr uint32_t kWorkgroupSize = 64;

// The tensor bindings (0..7) each shader source declares, as a bit set.
uint32_t declared_slots(const std::string& module) {
  auto starts = [&](const char* prefix) { return module.rfind(prefix, 0) == 0; };
  if (starts("map_") || starts("conv_") || starts("attention_")) return 0b1111;
  if (starts("index_") || starts("matmul_") || starts("xent_")) return 0b1011;
  if (starts("argreduce_")) return 0b11011;
  if (starts("reduce_")) return 0b1001;
  if (starts("rows_")) return 0b111111;
  if (starts("bytefill")) return 0b1000;
  return 0xff;
}

std::string cache_key_of(const PhysicalDevice& physical) {
  char uuid[2 * VK_UUID_SIZE + 1];
  for (uint32_t i = 0; i < VK_UUID_SIZE; ++i)
    std::snprintf(uuid + 2 * i, 3, "%02x", physical.properties.pipelineCacheUUID[i]);
  return "pipelines-" + std::to_string(physical.properties.vendorID) + "-" +
         std::to_string(physical.properties.deviceID) + "-" +
         std::to_string(physical.properties.driverVersion) + "-" + uuid;
}

}  // namespace

Pipelines::Pipelines(VkDevice device, const PhysicalDevice& physical)
    : device_(device), cache_key_(cache_key_of(physical)) {
  VkDescriptorSetLayoutBinding bindings[kBindings];
  for (uint32_t i = 0; i < kBindings; ++i) {
    bindings[i] = {};
    bindings[i].binding = i;
    bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    bindings[i].descriptorCount = 1;
    bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
  }
  VkDescriptorSetLayoutCreateInfo set{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  set.flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR;
  set.bindingCount = kBindings;
  set.pBindings = bindings;
  check(vk.CreateDescriptorSetLayout(device_, &set, nullptr, &set_layout_),
        "vkCreateDescriptorSetLayout");
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, 8};
  VkPipelineLayoutCreateInfo layout{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  layout.setLayoutCount = 1;
  layout.pSetLayouts = &set_layout_;
  layout.pushConstantRangeCount = 1;
  layout.pPushConstantRanges = &range;
  check(vk.CreatePipelineLayout(device_, &layout, nullptr, &layout_), "vkCreatePipelineLayout");

  oar::sdk::DiskCache disk("vulkan");
  std::optional<std::vector<uint8_t>> data = disk.load(cache_key_);
  VkPipelineCacheCreateInfo cache{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  if (data && !data->empty()) {
    cache.initialDataSize = data->size();
    cache.pInitialData = data->data();
    loaded_cache_size_ = data->size();
  }
  // A stale or corrupt blob is the driver's to refuse; then start empty.
  if (vk.CreatePipelineCache(device_, &cache, nullptr, &cache_) != VK_SUCCESS) {
    cache.initialDataSize = 0;
    cache.pInitialData = nullptr;
    loaded_cache_size_ = 0;
    check(vk.CreatePipelineCache(device_, &cache, nullptr, &cache_), "vkCreatePipelineCache");
  }
}

Pipelines::~Pipelines() {
  size_t size = 0;
  if (vk.GetPipelineCacheData(device_, cache_, &size, nullptr) == VK_SUCCESS &&
      size != loaded_cache_size_ && size > 0) {
    std::vector<uint8_t> data(size);
    if (vk.GetPipelineCacheData(device_, cache_, &size, data.data()) == VK_SUCCESS) {
      oar::sdk::DiskCache("vulkan").store(cache_key_, data.data(), size);
    }
  }
  for (auto& [name, module] : modules_) {
    for (auto& [op, pipeline] : module.pipelines) vk.DestroyPipeline(device_, pipeline, nullptr);
    vk.DestroyShaderModule(device_, module.shader, nullptr);
  }
  vk.DestroyPipelineCache(device_, cache_, nullptr);
  vk.DestroyPipelineLayout(device_, layout_, nullptr);
  vk.DestroyDescriptorSetLayout(device_, set_layout_, nullptr);
}

VkPipeline Pipelines::get(const std::string& module, int32_t op) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto found_module = modules_.find(module);
  if (found_module != modules_.end()) {
    auto found = found_module->second.pipelines.find(op);
    if (found != found_module->second.pipelines.end()) return found->second;
  }

  Module& entry = found_module != modules_.end() ? found_module->second : modules_[module];
  VkShaderModule& shader = entry.shader;
  if (shader == VK_NULL_HANDLE) {
    const ShaderBinary* binary = find_shader(module);
    if (binary == nullptr) {
      modules_.erase(module);
      throw oar::sdk::Error(OAR_STATUS_INTERNAL,
                            "the vulkan plugin was built without the shader " + module);
    }
    VkShaderModuleCreateInfo info{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    info.codeSize = binary->bytes;
    info.pCode = binary->words;
    VkResult result = vk.CreateShaderModule(device_, &info, nullptr, &shader);
    if (result != VK_SUCCESS) {
      modules_.erase(module);
      check(result, ("vkCreateShaderModule " + module).c_str());
    }
  }
  int32_t constants[2] = {int32_t(kWorkgroupSize), op};
  VkSpecializationMapEntry entries[2] = {{0, 0, 4}, {1, 4, 4}};
  VkSpecializationInfo specialization{2, entries, sizeof(constants), constants};
  VkComputePipelineCreateInfo info{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  info.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  info.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  info.stage.module = shader;
  info.stage.pName = "main";
  info.stage.pSpecializationInfo = &specialization;
  info.layout = layout_;
  VkPipeline pipeline = VK_NULL_HANDLE;
  check(vk.CreateComputePipelines(device_, cache_, 1, &info, nullptr, &pipeline),
        ("vkCreateComputePipelines " + module + "/" + std::to_string(op)).c_str());
  entry.pipelines.emplace(op, pipeline);
  return pipeline;
}

void dispatch(oar_stream_s* stream, const std::string& module, int32_t op,
              const std::vector<Binding>& tensors, const int32_t* params, uint32_t count,
              uint64_t invocations) {
  if (invocations == 0) return;
  oar_device_s* device = stream->device;
  VkPipeline pipeline = device->pipelines->get(module, op);
  VkBuffer buffers[kBindings];
  for (uint32_t i = 0; i < 8; ++i) buffers[i] = device->dummy.buffer;
  for (const Binding& b : tensors) buffers[b.slot] = b.buffer;
  // Only the tensor slots the module declares need a descriptor (each costs
  // the driver a little at every dispatch).
  uint32_t declared = declared_slots(module);
  // The host reads what lands in pinned memory, and the error word that the
  // index-reading shaders may write.
  bool host_reads = module.rfind("index_", 0) == 0 || module.rfind("xent_", 0) == 0;
  for (const Binding& b : tensors) host_reads = host_reads || device->is_pinned(b.buffer);
  // One invocation per item where the driver allows; the shaders'
  // grid-stride loops cover the rest.
  uint64_t groups = std::min<uint64_t>((invocations + kWorkgroupSize - 1) / kWorkgroupSize,
                                       device->physical->max_groups);
  stream->record(count, [&](Batch& batch, uint32_t base) {
    std::memcpy(static_cast<int32_t*>(batch.params.mapped) + base, params, count * sizeof(int32_t));
    batch.host_reads |= host_reads;
    buffers[8] = batch.params.buffer;
    buffers[9] = stream->timeline->error_word.buffer;
    // Bind and push only what differs from the previous dispatch of this
    // command buffer (all pipelines share one layout, so the pushed
    // descriptors stay bound across pipelines): on lavapipe, recording the
    // push is most of a small op's host time.
    if (batch.bound_pipeline != pipeline) {
      vk.CmdBindPipeline(batch.commands, VK_PIPELINE_BIND_POINT_COMPUTE, pipeline);
      batch.bound_pipeline = pipeline;
    }
    const uint32_t needed = (declared & 0xffu) | 0x300u;
    bool same = (batch.pushed_mask & needed) == needed;
    for (uint32_t i = 0; same && i < kBindings; ++i) {
      if ((needed & (1u << i)) != 0 && batch.pushed[i] != buffers[i]) same = false;
    }
    if (!same) {
      VkDescriptorBufferInfo infos[kBindings];
      VkWriteDescriptorSet writes[kBindings];
      uint32_t count = 0;
      for (uint32_t i = 0; i < kBindings; ++i) {
        if ((needed & (1u << i)) == 0) continue;
        infos[count] = {buffers[i], 0, VK_WHOLE_SIZE};
        writes[count] = {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
        writes[count].dstBinding = i;
        writes[count].descriptorCount = 1;
        writes[count].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
        writes[count].pBufferInfo = &infos[count];
        batch.pushed[i] = buffers[i];
        ++count;
      }
      device->push_descriptor_set(batch.commands, VK_PIPELINE_BIND_POINT_COMPUTE,
                                  device->pipelines->layout(), 0, count, writes);
      batch.pushed_mask = needed;
    }
    uint32_t constants[2] = {base, uint32_t(batch.value)};
    vk.CmdPushConstants(batch.commands, device->pipelines->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                        sizeof(constants), constants);
    vk.CmdDispatch(batch.commands, uint32_t(groups), 1, 1);
  });
}

}  // namespace oar::vulkan
