#include "loader.h"

#include <dlfcn.h>
#include <stdlib.h>

namespace oar::vulkan {

Api vk;

namespace {

struct Library {
  PFN_vkGetInstanceProcAddr get_instance_proc_addr = nullptr;
  std::string why;
};

const Library& library() {
  static const Library result = [] {
    Library l;
    const char* configured = secure_getenv("OAR_VULKAN_LIBRARY");
    std::string name = configured != nullptr && *configured != '\0' ? configured : "libvulkan.so.1";
    // RTLD_NODELETE: the loader and the drivers it opened keep threads of
    // their own; they must outlive this plugin's unloading.
    void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (handle == nullptr) {
      const char* error = dlerror();
      l.why = "the Vulkan loader " + name + " cannot be loaded (" +
              (error != nullptr ? error : "unknown error") +
              "): install it (Debian: libvulkan1) with a driver such as mesa-vulkan-drivers, or "
              "point OAR_VULKAN_LIBRARY at a libvulkan";
      return l;
    }
    l.get_instance_proc_addr =
        reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(handle, "vkGetInstanceProcAddr"));
    if (l.get_instance_proc_addr == nullptr) {
      l.why = name +
              " lacks vkGetInstanceProcAddr: it is not a Vulkan loader; install libvulkan1 "
              "(Debian) or point OAR_VULKAN_LIBRARY at a libvulkan";
    }
    return l;
  }();
  return result;
}

}  // namespace

bool load_loader(std::string* why) {
  const Library& l = library();
  if (l.get_instance_proc_addr == nullptr) {
    *why = l.why;
    return false;
  }
  vk = Api{};
  vk.GetInstanceProcAddr = l.get_instance_proc_addr;
#define OAR_VK_LOAD(name)                                                                \
  vk.name = reinterpret_cast<PFN_vk##name>(vk.GetInstanceProcAddr(nullptr, "vk" #name)); \
  if (vk.name == nullptr) {                                                              \
    *why = "the Vulkan loader returns no vk" #name                                       \
           ": install a Vulkan 1.2 or newer loader "                                     \
           "(Debian: libvulkan1)";                                                       \
    return false;                                                                        \
  }
  OAR_VK_GLOBAL_FUNCTIONS(OAR_VK_LOAD)
#undef OAR_VK_LOAD
  return true;
}

bool load_instance_functions(VkInstance instance, std::string* why) {
#define OAR_VK_LOAD(name)                                                                 \
  vk.name = reinterpret_cast<PFN_vk##name>(vk.GetInstanceProcAddr(instance, "vk" #name)); \
  if (vk.name == nullptr) {                                                               \
    *why = "the Vulkan loader returns no vk" #name                                        \
           " (a Vulkan 1.2 entry point): install a "                                      \
           "Vulkan 1.2 or newer loader (Debian: libvulkan1)";                             \
    return false;                                                                         \
  }
  OAR_VK_INSTANCE_FUNCTIONS(OAR_VK_LOAD)
#undef OAR_VK_LOAD
  return true;
}

}  // namespace oar::vulkan
