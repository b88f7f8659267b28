// A fake libze_loader.so.1 for the level_zero plugin's tests: the entry
// points the plugin resolves (loader.h), over host memory, with no device.
// An immediate command list is a worker thread that runs its commands in
// order (copies and fills with memcpy/memset, signals, waits, timestamps
// from the host's steady clock); a kernel launch is recorded, not run.
// zeModuleCreate reads the SPIR-V's OpEntryPoint names and each entry point's
// parameter count, so that, as a driver would, zeKernelCreate fails for a
// kernel the embedded module lacks, zeKernelSetArgumentValue for an index past
// the kernel's parameters, and a launch with a parameter never set.
//
// Switches, read at zeInit (environment variables):
//   OAR_ZE_FAKE_INIT_RESULT=<n>  zeInit returns ze_result_t n
//   OAR_ZE_FAKE_DEVICES=<n>      devices of the one driver (default 1)
//   OAR_ZE_FAKE_FP64=0           the devices have no fp64
//   OAR_ZE_FAKE_LOST_AFTER=<n>   the device is lost after n commands ran
//   OAR_ZE_FAKE_MODULE_RESULT=<n> zeModuleCreate fails with n and a build log
//   OAR_ZE_FAKE_INDEX_ERROR=<kernel> when that kernel runs, it writes the
//                                index-error record {1, 7, 5} (common.cl's
//                                index_error: index_select, index 7, bound 5)
//                                through its last argument, as the kernel
//                                does for an index out of range
// Inspection (extern "C", for the tests): oar_ze_fake_live() counts live
// objects; oar_ze_fake_log() is the order objects were destroyed in;
// oar_ze_fake_launches() the launches, one line each:
//   "<kernel> groups=X,Y,Z group=x,y,z args=<arg>;<arg>;..." where an argument
//   of 4 or 8 bytes is its signed decimal value, local memory is "local:<n>"
//   and any other size "<n>B:<hex of the bytes>".
#include <level_zero/ze_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#define FAKE_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

std::mutex g_mutex;  // bookkeeping below, and every event's state
std::condition_variable g_changed;
std::string g_log;
std::string g_launches;
int g_live = 0;
bool g_lost = false;
long g_commands_left = -1;  // -1: never lost
int g_devices = 1;
bool g_fp64 = true;
ze_result_t g_module_result = ZE_RESULT_SUCCESS;
std::string g_index_error_kernel;
bool g_initialized = false;

long env(const char* name, long fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::strtol(value, nullptr, 0) : fallback;
}

void destroyed(const char* what) {
  std::lock_guard<std::mutex> lock(g_mutex);
  --g_live;
  g_log += std::string(what) + "\n";
}
void created() {
  std::lock_guard<std::mutex> lock(g_mutex);
  ++g_live;
}

}  // namespace

struct _ze_driver_handle_t {};
struct _ze_device_handle_t {
  int index = 0;
};
struct _ze_context_handle_t {};
struct _ze_event_pool_handle_t {};
struct _ze_event_handle_t {
  bool signaled = false;
};
struct _ze_module_build_log_handle_t {
  std::string text;
};
// A kernel parameter's size in bytes as the SPIR-V declares it: a global
// pointer 8, a scalar its width, a struct passed by value (a Function
// pointer) the size of its members; 0 for local memory (a Workgroup pointer:
// its size is the argument's).
using Parameters = std::vector<uint32_t>;
struct _ze_module_handle_t {
  std::map<std::string, Parameters> entry_points;  // name -> parameter sizes
};
struct _ze_kernel_handle_t {
  std::string name;
  Parameters parameters;
  std::map<uint32_t, std::vector<unsigned char>> args;
  std::set<uint32_t> local;  // the arguments that are local memory
  uint32_t group[3] = {1, 1, 1};
};
struct _ze_command_list_handle_t {
  std::deque<std::function<void()>> commands;
  std::thread worker;
  bool stopping = false;
  void run() {
    for (;;) {
      std::function<void()> command;
      {
        std::unique_lock<std::mutex> lock(g_mutex);
        g_changed.wait(lock, [this] { return stopping || !commands.empty(); });
        if (commands.empty()) return;
        command = std::move(commands.front());
        commands.pop_front();
        if (g_lost) continue;  // a lost device runs nothing more
        if (g_commands_left == 0) {
          g_lost = true;
          g_changed.notify_all();
          continue;
        }
        if (g_commands_left > 0) --g_commands_left;
      }
      command();
      g_changed.notify_all();
    }
  }
};

namespace {

_ze_driver_handle_t g_driver;
_ze_device_handle_t g_device_handles[8];

ze_result_t enqueue(ze_command_list_handle_t list, std::function<void()> command) {
  if (list == nullptr) return ZE_RESULT_ERROR_INVALID_NULL_HANDLE;
  std::lock_guard<std::mutex> lock(g_mutex);
  list->commands.push_back(std::move(command));
  g_changed.notify_all();
  return ZE_RESULT_SUCCESS;
}

void signal(ze_event_handle_t event) {
  if (event == nullptr) return;
  std::lock_guard<std::mutex> lock(g_mutex);
  event->signaled = true;
  g_changed.notify_all();
}

// Waits (worker side) for |events|; false when the device was lost.
bool wait_all(ze_command_list_handle_t list, uint32_t count, ze_event_handle_t* events) {
  std::unique_lock<std::mutex> lock(g_mutex);
  g_changed.wait(lock, [&] {
    if (g_lost || list->stopping) return true;
    for (uint32_t i = 0; i < count; ++i) {
      if (!events[i]->signaled) return false;
    }
    return true;
  });
  return !g_lost;
}

// The names of a SPIR-V module's entry points (OpEntryPoint, opcode 15:
// execution model, function id, then the name as a literal string) and the
// parameter sizes of each (the OpFunctionParameter, opcode 55, of the
// OpFunction, opcode 54, with that id; sizes from the type declarations).
bool entry_points(const uint8_t* bytes, size_t size, std::map<std::string, Parameters>* names) {
  if (size < 20 || size % 4 != 0) return false;
  std::vector<uint32_t> words(size / 4);
  std::memcpy(words.data(), bytes, size);
  if (words[0] != 0x07230203u) return false;
  std::map<uint32_t, std::string> by_id;
  std::map<uint32_t, Parameters> parameters;
  std::map<uint32_t, uint64_t> sizes, constants;
  uint32_t function = 0;
  for (size_t at = 5; at < words.size();) {
    const uint32_t count = words[at] >> 16, opcode = words[at] & 0xffffu;
    if (count == 0 || at + count > words.size()) return false;
    const uint32_t* w = &words[at];
    if (opcode == 15 && count > 3) {
      const char* name = reinterpret_cast<const char*>(&w[3]);
      by_id[w[2]] = std::string(name, strnlen(name, (count - 3) * 4));
    } else if (opcode == 21 || opcode == 22) {  // OpTypeInt, OpTypeFloat: id, width
      sizes[w[1]] = w[2] / 8;
    } else if (opcode == 23) {  // OpTypeVector: id, component, count
      sizes[w[1]] = sizes[w[2]] * w[3];
    } else if (opcode == 43 && count >= 4) {  // OpConstant: type, id, value
      constants[w[2]] = w[3];
    } else if (opcode == 28) {  // OpTypeArray: id, element, length constant
      sizes[w[1]] = sizes[w[2]] * constants[w[3]];
    } else if (opcode == 30) {  // OpTypeStruct: id, members (64-bit fields here: no padding)
      uint64_t total = 0;
      for (uint32_t i = 2; i < count; ++i) total += sizes[w[i]];
      sizes[w[1]] = total;
    } else if (opcode == 32) {  // OpTypePointer: id, storage class, pointee
      sizes[w[1]] = w[2] == 7 ? sizes[w[3]] : w[2] == 4 ? 0 : 8;  // Function, Workgroup
    } else if (opcode == 54 && count == 5) {
      function = w[2];
      parameters[function];
    } else if (opcode == 55) {  // OpFunctionParameter: type, id
      parameters[function].push_back(uint32_t(sizes[w[1]]));
    }
    at += count;
  }
  for (const auto& [id, name] : by_id) (*names)[name] = parameters[id];
  return true;
}

// An argument as oar_ze_fake_launches() shows it.
std::string show(const std::vector<unsigned char>& bytes, bool local) {
  if (local) return "local:" + std::to_string(bytes.size());
  if (bytes.size() == 4) {
    int32_t v;
    std::memcpy(&v, bytes.data(), 4);
    return std::to_string(v);
  }
  if (bytes.size() == 8) {
    int64_t v;
    std::memcpy(&v, bytes.data(), 8);
    return std::to_string(v);
  }
  std::string text = std::to_string(bytes.size()) + "B:";
  static const char kHex[] = "0123456789abcdef";
  for (unsigned char b : bytes) {
    text += kHex[b >> 4];
    text += kHex[b & 15];
  }
  return text;
}

}  // namespace

FAKE_EXPORT const char* oar_ze_fake_log() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(g_mutex);
  copy = g_log;
  return copy.c_str();
}
FAKE_EXPORT int oar_ze_fake_live() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_live;
}
FAKE_EXPORT const char* oar_ze_fake_launches() {
  static std::string copy;
  std::lock_guard<std::mutex> lock(g_mutex);
  copy = g_launches;
  return copy.c_str();
}
FAKE_EXPORT void oar_ze_fake_reset() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_log.clear();
  g_launches.clear();
}

extern "C" {

ze_result_t zeInit(ze_init_flags_t) {
  const long result = env("OAR_ZE_FAKE_INIT_RESULT", 0);
  if (result != 0) return ze_result_t(result);
  std::lock_guard<std::mutex> lock(g_mutex);
  g_devices = int(env("OAR_ZE_FAKE_DEVICES", 1));
  if (g_devices > 8) g_devices = 8;
  g_fp64 = env("OAR_ZE_FAKE_FP64", 1) != 0;
  const char* index_error = std::getenv("OAR_ZE_FAKE_INDEX_ERROR");
  g_index_error_kernel = index_error != nullptr ? index_error : "";
  g_commands_left = env("OAR_ZE_FAKE_LOST_AFTER", -1);
  g_module_result = ze_result_t(env("OAR_ZE_FAKE_MODULE_RESULT", 0));
  g_lost = false;
  g_initialized = true;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGet(uint32_t* count, ze_driver_handle_t* drivers) {
  if (!g_initialized) return ZE_RESULT_ERROR_UNINITIALIZED;
  if (drivers != nullptr && *count >= 1) drivers[0] = &g_driver;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGetApiVersion(ze_driver_handle_t, ze_api_version_t* version) {
  *version = ZE_API_VERSION_1_4;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDriverGetProperties(ze_driver_handle_t, ze_driver_properties_t* properties) {
  properties->driverVersion = (1u << 24) | (2u << 16) | 3u;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGet(ze_driver_handle_t, uint32_t* count, ze_device_handle_t* devices) {
  if (devices != nullptr) {
    for (int i = 0; i < g_devices && uint32_t(i) < *count; ++i) {
      g_device_handles[i].index = i;
      devices[i] = &g_device_handles[i];
    }
  }
  *count = uint32_t(g_devices);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetProperties(ze_device_handle_t device, ze_device_properties_t* p) {
  p->type = ZE_DEVICE_TYPE_GPU;
  p->vendorId = 0x8086;
  p->maxMemAllocSize = 1ull << 28;
  p->numSlices = 1;
  p->numSubslicesPerSlice = 2;
  p->numEUsPerSubslice = 8;
  p->timerResolution = 1;  // ns per tick: the clock below counts ns
  p->timestampValidBits = 64;
  std::snprintf(p->name, sizeof p->name, "OAR fake Level Zero device %d (no GPU)", device->index);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetComputeProperties(ze_device_handle_t, ze_device_compute_properties_t* p) {
  p->maxTotalGroupSize = 1024;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetModuleProperties(ze_device_handle_t, ze_device_module_properties_t* p) {
  p->flags = ZE_DEVICE_MODULE_FLAG_FP16 | (g_fp64 ? ZE_DEVICE_MODULE_FLAG_FP64 : 0);
  p->spirvVersionSupported = ZE_MAKE_VERSION(1, 2);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetMemoryProperties(ze_device_handle_t, uint32_t* count,
                                        ze_device_memory_properties_t* p) {
  if (p != nullptr && *count >= 1) p[0].totalSize = 1ull << 30;
  *count = 1;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeDeviceGetCommandQueueGroupProperties(ze_device_handle_t, uint32_t* count,
                                                   ze_command_queue_group_properties_t* p) {
  // A copy engine first, then the compute group: the plugin must pick ordinal 1.
  if (p != nullptr && *count >= 2) {
    p[0].flags = ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    p[0].numQueues = 1;
    p[1].flags =
        ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE | ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COPY;
    p[1].numQueues = 1;
  }
  *count = 2;
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextCreate(ze_driver_handle_t, const ze_context_desc_t*,
                            ze_context_handle_t* context) {
  *context = new _ze_context_handle_t;
  created();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeContextDestroy(ze_context_handle_t context) {
  delete context;
  destroyed("context");
  return ZE_RESULT_SUCCESS;
}

namespace {
ze_result_t allocate(size_t size, size_t alignment, void** out) {
  if (size > (1ull << 28)) return ZE_RESULT_ERROR_UNSUPPORTED_SIZE;
  if (alignment == 0) alignment = 64;
  *out = std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment);
  if (*out == nullptr) return ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY;
  created();
  return ZE_RESULT_SUCCESS;
}
}  // namespace

ze_result_t zeMemAllocDevice(ze_context_handle_t, const ze_device_mem_alloc_desc_t*, size_t size,
                             size_t alignment, ze_device_handle_t, void** out) {
  return allocate(size, alignment, out);
}
ze_result_t zeMemAllocHost(ze_context_handle_t, const ze_host_mem_alloc_desc_t*, size_t size,
                           size_t alignment, void** out) {
  return allocate(size, alignment, out);
}
ze_result_t zeMemAllocShared(ze_context_handle_t, const ze_device_mem_alloc_desc_t*,
                             const ze_host_mem_alloc_desc_t*, size_t size, size_t alignment,
                             ze_device_handle_t, void** out) {
  return allocate(size, alignment, out);
}
ze_result_t zeMemFree(ze_context_handle_t, void* pointer) {
  std::free(pointer);
  destroyed("memory");
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListCreateImmediate(ze_context_handle_t, ze_device_handle_t,
                                         const ze_command_queue_desc_t* desc,
                                         ze_command_list_handle_t* list) {
  if (desc->ordinal != 1) return ZE_RESULT_ERROR_INVALID_ARGUMENT;  // not the compute group
  auto* made = new _ze_command_list_handle_t;
  made->worker = std::thread([made] { made->run(); });
  *list = made;
  created();
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListDestroy(ze_command_list_handle_t list) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    list->stopping = true;
    g_changed.notify_all();
  }
  list->worker.join();
  delete list;
  destroyed("command list");
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeCommandListAppendMemoryCopy(ze_command_list_handle_t list, void* dst, const void* src,
                                          size_t size, ze_event_handle_t signal_event, uint32_t,
                                          ze_event_handle_t*) {
  return enqueue(list, [=] {
    std::memcpy(dst, src, size);
    signal(signal_event);
  });
}

ze_result_t zeCommandListAppendMemoryFill(ze_command_list_handle_t list, void* dst,
                                          const void* pattern, size_t pattern_size, size_t size,
                                          ze_event_handle_t signal_event, uint32_t,
                                          ze_event_handle_t*) {
  std::vector<unsigned char> bytes(static_cast<const unsigned char*>(pattern),
                                   static_cast<const unsigned char*>(pattern) + pattern_size);
  return enqueue(list, [=] {
    for (size_t i = 0; i < size; ++i) static_cast<unsigned char*>(dst)[i] = bytes[i % bytes.size()];
    signal(signal_event);
  });
}

ze_result_t zeCommandListAppendBarrier(ze_command_list_handle_t list,
                                       ze_event_handle_t signal_event, uint32_t,
                                       ze_event_handle_t*) {
  return enqueue(list, [=] { signal(signal_event); });
}

ze_result_t zeCommandListAppendSignalEvent(ze_command_list_handle_t list, ze_event_handle_t event) {
  return enqueue(list, [=] { signal(event); });
}

ze_result_t zeCommandListAppendWaitOnEvents(ze_command_list_handle_t list, uint32_t count,
                                            ze_event_handle_t* events) {
  std::vector<ze_event_handle_t> copy(events, events + count);
  return enqueue(list, [=]() mutable { wait_all(list, count, copy.data()); });
}

ze_result_t zeCommandListAppendWriteGlobalTimestamp(ze_command_list_handle_t list, uint64_t* dst,
                                                    ze_event_handle_t signal_event, uint32_t,
                                                    ze_event_handle_t*) {
  return enqueue(list, [=] {
    *dst = uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count());
    signal(signal_event);
  });
}

ze_result_t zeCommandListAppendLaunchKernel(ze_command_list_handle_t list,
                                            ze_kernel_handle_t kernel,
                                            const ze_group_count_t* groups,
                                            ze_event_handle_t signal_event, uint32_t,
                                            ze_event_handle_t*) {
  if (kernel->args.size() != kernel->parameters.size()) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  std::string line =
      kernel->name + " groups=" + std::to_string(groups->groupCountX) + "," +
      std::to_string(groups->groupCountY) + "," + std::to_string(groups->groupCountZ) +
      " group=" + std::to_string(kernel->group[0]) + "," + std::to_string(kernel->group[1]) + "," +
      std::to_string(kernel->group[2]) + " args=";
  for (const auto& [index, bytes] : kernel->args) {
    line += (index == 0 ? "" : ";") + show(bytes, kernel->local.count(index) != 0);
  }
  line += "\n";
  // The index-error record the kernel would write (OAR_ZE_FAKE_INDEX_ERROR):
  // its last argument is the record's address.
  int64_t* record = nullptr;
  if (kernel->name == g_index_error_kernel && !kernel->args.empty() &&
      kernel->args.rbegin()->second.size() == sizeof(record)) {
    std::memcpy(&record, kernel->args.rbegin()->second.data(), sizeof(record));
  }
  return enqueue(list, [=] {
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      g_launches += line;
    }
    if (record != nullptr) {
      record[0] = 1;
      record[1] = 7;
      record[2] = 5;
    }
    signal(signal_event);
  });
}

ze_result_t zeEventPoolCreate(ze_context_handle_t, const ze_event_pool_desc_t* desc, uint32_t,
                              ze_device_handle_t*, ze_event_pool_handle_t* pool) {
  if ((desc->flags & ZE_EVENT_POOL_FLAG_HOST_VISIBLE) == 0) return ZE_RESULT_ERROR_INVALID_ARGUMENT;
  *pool = new _ze_event_pool_handle_t;
  created();
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeEventPoolDestroy(ze_event_pool_handle_t pool) {
  delete pool;
  destroyed("event pool");
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeEventCreate(ze_event_pool_handle_t, const ze_event_desc_t*,
                          ze_event_handle_t* event) {
  *event = new _ze_event_handle_t;
  created();
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeEventDestroy(ze_event_handle_t event) {
  delete event;
  destroyed("event");
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeEventHostSynchronize(ze_event_handle_t event, uint64_t timeout) {
  std::unique_lock<std::mutex> lock(g_mutex);
  auto ready = [event] { return event->signaled || g_lost; };
  if (timeout == UINT64_MAX) {
    g_changed.wait(lock, ready);
  } else if (!g_changed.wait_for(lock, std::chrono::nanoseconds(timeout), ready)) {
    return ZE_RESULT_NOT_READY;
  }
  return event->signaled ? ZE_RESULT_SUCCESS : ZE_RESULT_ERROR_DEVICE_LOST;
}
ze_result_t zeEventQueryStatus(ze_event_handle_t event) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (event->signaled) return ZE_RESULT_SUCCESS;
  return g_lost ? ZE_RESULT_ERROR_DEVICE_LOST : ZE_RESULT_NOT_READY;
}
ze_result_t zeEventHostSignal(ze_event_handle_t event) {
  signal(event);
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeModuleCreate(ze_context_handle_t, ze_device_handle_t, const ze_module_desc_t* desc,
                           ze_module_handle_t* module, ze_module_build_log_handle_t* log) {
  if (log != nullptr) {
    *log = new _ze_module_build_log_handle_t;
    created();
  }
  if (g_module_result != ZE_RESULT_SUCCESS) {
    if (log != nullptr) (*log)->text = "fake build log: error: the switch said so";
    return g_module_result;
  }
  auto made = std::make_unique<_ze_module_handle_t>();
  if (desc->format != ZE_MODULE_FORMAT_IL_SPIRV ||
      !entry_points(desc->pInputModule, desc->inputSize, &made->entry_points)) {
    if (log != nullptr) (*log)->text = "fake build log: not a SPIR-V module";
    return ZE_RESULT_ERROR_INVALID_NATIVE_BINARY;
  }
  *module = made.release();
  created();
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeModuleDestroy(ze_module_handle_t module) {
  delete module;
  destroyed("module");
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeModuleBuildLogGetString(ze_module_build_log_handle_t log, size_t* size, char* text) {
  if (text != nullptr) std::memcpy(text, log->text.c_str(), std::min(*size, log->text.size() + 1));
  *size = log->text.size() + 1;
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeModuleBuildLogDestroy(ze_module_build_log_handle_t log) {
  delete log;
  destroyed("build log");
  return ZE_RESULT_SUCCESS;
}

ze_result_t zeKernelCreate(ze_module_handle_t module, const ze_kernel_desc_t* desc,
                           ze_kernel_handle_t* kernel) {
  auto found = module->entry_points.find(desc->pKernelName);
  if (found == module->entry_points.end()) return ZE_RESULT_ERROR_INVALID_KERNEL_NAME;
  auto* made = new _ze_kernel_handle_t;
  made->name = desc->pKernelName;
  made->parameters = found->second;
  *kernel = made;
  created();
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeKernelDestroy(ze_kernel_handle_t kernel) {
  delete kernel;
  destroyed("kernel");
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeKernelSetArgumentValue(ze_kernel_handle_t kernel, uint32_t index, size_t size,
                                     const void* value) {
  if (index >= kernel->parameters.size()) return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX;
  const uint32_t expected = kernel->parameters[index];
  if (size == 0 || (expected != 0 && size != expected) || (expected == 0) != (value == nullptr)) {
    return ZE_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE;
  }
  auto& bytes = kernel->args[index];
  bytes.assign(size, 0);
  if (value != nullptr) {
    std::memcpy(bytes.data(), value, size);
    kernel->local.erase(index);
  } else {
    kernel->local.insert(index);  // local memory of |size| bytes
  }
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeKernelSetGroupSize(ze_kernel_handle_t kernel, uint32_t x, uint32_t y, uint32_t z) {
  if (x == 0 || y == 0 || z == 0 || uint64_t(x) * y * z > 1024) {
    return ZE_RESULT_ERROR_INVALID_GROUP_SIZE_DIMENSION;
  }
  kernel->group[0] = x;
  kernel->group[1] = y;
  kernel->group[2] = z;
  return ZE_RESULT_SUCCESS;
}
ze_result_t zeKernelSuggestGroupSize(ze_kernel_handle_t, uint32_t x, uint32_t y, uint32_t,
                                     uint32_t* gx, uint32_t* gy, uint32_t* gz) {
  // Divisors of the global size: up to 64 in x, 4 in y, 1 in z.
  uint32_t group = 64;
  while (group > 1 && x % group != 0) group /= 2;
  *gx = group;
  group = 4;
  while (group > 1 && y % group != 0) group /= 2;
  *gy = group;
  *gz = 1;
  return ZE_RESULT_SUCCESS;
}

}  // extern "C"
