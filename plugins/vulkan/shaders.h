// The SPIR-V modules glslc built from shaders/*.comp (see CMakeLists.txt),
// embedded in the plugin.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace oar::vulkan {

struct ShaderBinary {
  const char* name;  // "map_3_3_3": the source and its dtype defines
  const uint32_t* words;
  size_t bytes;
};

// The module called |name|, or nullptr.
const ShaderBinary* find_shader(std::string_view name);

}  // namespace oar::vulkan
