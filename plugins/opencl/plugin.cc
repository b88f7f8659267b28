// The opencl plugin's entry point, device discovery and device slots. Every
// device of every platform the ICD loader reports becomes an OAR device; no
// loader, no ICD or no device is not an error: the plugin serves zero devices
// and says why in the log.
#include <cstring>
#include <string>
#include <vector>

#include "opencl.h"
#include "program.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001
#endif

namespace oar::opencl {
namespace {

std::string platform_text(cl_platform_id platform, cl_platform_info what) {
  size_t size = 0;
  if (cl().clGetPlatformInfo(platform, what, 0, nullptr, &size) != CL_SUCCESS || size == 0)
    return "";
  std::string text(size, '\0');
  if (cl().clGetPlatformInfo(platform, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  text.resize(std::strlen(text.c_str()));
  return text;
}

std::string device_text(cl_device_id device, cl_device_info what) {
  size_t size = 0;
  if (cl().clGetDeviceInfo(device, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return "";
  std::string text(size, '\0');
  if (cl().clGetDeviceInfo(device, what, size, text.data(), nullptr) != CL_SUCCESS) return "";
  text.resize(std::strlen(text.c_str()));
  return text;
}

template <typename T>
T device_value(cl_device_id device, cl_device_info what) {
  T value{};
  check(cl().clGetDeviceInfo(device, what, sizeof(value), &value, nullptr), "clGetDeviceInfo");
  return value;
}

bool has_extension(const std::string& extensions, const char* name) {
  size_t at = extensions.find(name);
  while (at != std::string::npos) {
    size_t end = at + std::strlen(name);
    bool starts = at == 0 || extensions[at - 1] == ' ';
    bool ends = end == extensions.size() || extensions[end] == ' ';
    if (starts && ends) return true;
    at = extensions.find(name, end);
  }
  return false;
}

// Fills |d| from the OpenCL device's description.
void describe(PhysicalDevice& d) {
  oar_device_properties_t& p = d.properties;
  p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
  oar::sdk::copy_text(p.name, device_text(d.device, CL_DEVICE_NAME));
  oar::sdk::copy_text(p.vendor, device_text(d.device, CL_DEVICE_VENDOR));
  oar::sdk::copy_text(p.driver_version, device_text(d.device, CL_DRIVER_VERSION));
  auto type = device_value<cl_device_type>(d.device, CL_DEVICE_TYPE);
  p.kind = (type & CL_DEVICE_TYPE_GPU)           ? OAR_DEVICE_KIND_GPU
           : (type & CL_DEVICE_TYPE_CPU)         ? OAR_DEVICE_KIND_CPU
           : (type & CL_DEVICE_TYPE_ACCELERATOR) ? OAR_DEVICE_KIND_ACCELERATOR
                                                 : OAR_DEVICE_KIND_OTHER;
  p.dlpack_device_type = kDLOpenCL;
  p.total_memory = device_value<cl_ulong>(d.device, CL_DEVICE_GLOBAL_MEM_SIZE);
  p.max_allocation_size = device_value<cl_ulong>(d.device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
  // CL_DEVICE_MEM_BASE_ADDR_ALIGN is in bits; 8 bytes at least so that every
  // element type is aligned.
  cl_uint align_bits = device_value<cl_uint>(d.device, CL_DEVICE_MEM_BASE_ADDR_ALIGN);
  p.min_alignment = align_bits / 8 < 8 ? 8 : align_bits / 8;
  p.memory_kinds = OAR_MEMORY_KIND_DEVICE;
  std::string extensions = device_text(d.device, CL_DEVICE_EXTENSIONS);
  d.fp16 = has_extension(extensions, "cl_khr_fp16");
  d.fp64 = has_extension(extensions, "cl_khr_fp64");
  // A claim says every operator has a kernel of that dtype that meets the
  // suite (docs/abi.md, "Dtype claims"), not that the hardware computes in it.
  // bf16 and f16 are stored as 16 bits and computed in f32: bf16 by shifting,
  // f16 through vload_half/vstore_half_rte, which are core OpenCL and need no
  // cl_khr_fp16. So both are claimed on every device; f64 needs cl_khr_fp64.
  p.dtypes = OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F16;
  if (d.fp64) p.dtypes |= OAR_DTYPE_SUPPORT_F64;
  // What the device computes in (docs/abi.md, "Native arithmetic"): half and
  // double arithmetic in kernels is what cl_khr_fp16 and cl_khr_fp64 promise.
  p.native_dtypes = (d.fp16 ? uint32_t(OAR_DTYPE_SUPPORT_F16) : 0u) |
                    (d.fp64 ? uint32_t(OAR_DTYPE_SUPPORT_F64) : 0u);
  auto queue_properties =
      device_value<cl_command_queue_properties>(d.device, CL_DEVICE_QUEUE_PROPERTIES);
  d.profiling = (queue_properties & CL_QUEUE_PROFILING_ENABLE) != 0;
  p.features = OAR_DEVICE_FEATURE_ASYNC_COPIES | OAR_DEVICE_FEATURE_HOST_CALLBACKS;
  if (d.profiling) p.features |= OAR_DEVICE_FEATURE_TIMING_EVENTS;
  p.compute_units = device_value<cl_uint>(d.device, CL_DEVICE_MAX_COMPUTE_UNITS);
  auto fp_config = device_value<cl_device_fp_config>(d.device, CL_DEVICE_SINGLE_FP_CONFIG);
  d.correctly_rounded_sqrt = (fp_config & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT) != 0;
  d.max_work_group_size = device_value<size_t>(d.device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
}

void CL_CALLBACK context_error(const char* message, const void*, size_t, void*) {
  oar::sdk::log(OAR_LOG_LEVEL_WARNING, std::string("opencl: driver reported: ") + message);
}

}  // namespace

OpenclPlugin& plugin() { return *oar::sdk::detail::instance<OpenclPlugin>(); }

OpenclPlugin::OpenclPlugin() {
  std::string why;
  if (load_cl_api(&why) == nullptr) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "opencl: " + why + ". The plugin serves 0 devices.");
    return;
  }
  cl_uint platform_count = 0;
  cl_int code = cl().clGetPlatformIDs(0, nullptr, &platform_count);
  if (code == CL_PLATFORM_NOT_FOUND_KHR || (code == CL_SUCCESS && platform_count == 0)) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                  "opencl: no OpenCL platform found (" + cl_error_name(code) +
                      "): the ICD loader has no driver registered; install one such as "
                      "pocl-opencl-icd (CPU) or your GPU vendor's ICD, and check "
                      "/etc/OpenCL/vendors or OCL_ICD_VENDORS. The plugin serves 0 devices.");
    return;
  }
  if (code != CL_SUCCESS) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, cl_error_message(code, "opencl: clGetPlatformIDs") +
                                             "; the plugin serves 0 devices");
    return;
  }
  std::vector<cl_platform_id> platforms(platform_count);
  check(cl().clGetPlatformIDs(platform_count, platforms.data(), nullptr), "clGetPlatformIDs");
  for (cl_platform_id platform : platforms) {
    cl_uint count = 0;
    code = cl().clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 0, nullptr, &count);
    std::string platform_name = platform_text(platform, CL_PLATFORM_NAME);
    if (code != CL_SUCCESS || count == 0) {
      oar::sdk::log(OAR_LOG_LEVEL_INFO, "opencl: platform '" + platform_name + "' has no device (" +
                                            cl_error_name(code) + ")");
      continue;
    }
    std::vector<cl_device_id> ids(count);
    check(cl().clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, count, ids.data(), nullptr),
          "clGetDeviceIDs");
    for (cl_device_id id : ids) {
      // One device that cannot be described or given a context is skipped,
      // with the reason, and never stops the others.
      try {
        auto device = std::make_unique<PhysicalDevice>();
        device->platform = platform;
        device->device = id;
        device->platform_name = platform_name;
        describe(*device);
        cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                         reinterpret_cast<cl_context_properties>(platform), 0};
        device->context = cl().clCreateContext(props, 1, &id, context_error, nullptr, &code);
        check(code, "clCreateContext");
        device->programs = std::make_unique<ProgramCache>(device.get());
        devices_.push_back(std::move(device));
      } catch (const oar::sdk::Error& e) {
        oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                      "opencl: skipping a device of platform '" + platform_name + "': " + e.what());
      }
    }
  }
  if (devices_.empty()) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING,
                  "opencl: OpenCL platforms were found but none has a usable device; the plugin "
                  "serves 0 devices");
  }
}

OpenclPlugin::~OpenclPlugin() {
  std::unordered_set<oar_device_s*> leaked;
  {
    std::lock_guard<std::mutex> lock(devices_mutex_);
    leaked.swap(open_);
  }
  for (oar_device_s* device : leaked) release_device(device);
  for (auto& device : devices_) {
    device->programs.reset();
    if (device->context != nullptr) cl().clReleaseContext(device->context);
  }
}

void OpenclPlugin::require_index(int32_t index) const {
  oar::sdk::require(index >= 0 && index < static_cast<int32_t>(devices_.size()),
                    OAR_STATUS_OUT_OF_RANGE,
                    "device index " + std::to_string(index) + " is out of range (" +
                        std::to_string(devices_.size()) + " OpenCL device(s))");
}

void OpenclPlugin::device_count(int32_t* out_count) {
  require_not_null(out_count, "out_count");
  *out_count = static_cast<int32_t>(devices_.size());
}

void OpenclPlugin::device_properties(int32_t index, oar_device_properties_t* out_properties) {
  require_index(index);
  oar::sdk::copy_properties(devices_[index]->properties, out_properties);
}

void OpenclPlugin::device_open(int32_t index, oar_device_t* out_device) {
  require_index(index);
  require_not_null(out_device, "out_device");
  auto device = std::make_unique<oar_device_s>();
  device->physical = devices_[index].get();
  device->index = index;
  std::lock_guard<std::mutex> lock(devices_mutex_);
  open_.insert(device.get());
  *out_device = device.release();
}

void OpenclPlugin::device_close(oar_device_t device) {
  if (device == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(devices_mutex_);
    oar::sdk::require(open_.erase(device) == 1, OAR_STATUS_INVALID_ARGUMENT,
                      "device_close: not an open opencl device");
  }
  release_device(device);
}

void OpenclPlugin::release_device(oar_device_s* device) {
  std::unordered_set<oar_stream_s*> streams;
  std::unordered_set<oar_event_s*> events;
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    streams.swap(device->streams);
    events.swap(device->events);
  }
  auto memories = allocations_.take_all(device);
  if (!streams.empty() || !events.empty() || !memories.empty()) {
    oar::sdk::log(OAR_LOG_LEVEL_WARNING, "opencl: device closed with " +
                                             std::to_string(streams.size()) + " stream(s), " +
                                             std::to_string(events.size()) + " event(s) and " +
                                             std::to_string(memories.size()) +
                                             " allocation(s) still alive; releasing them");
  }
  for (oar_event_s* event : events) delete event;
  for (oar_stream_s* stream : streams) destroy_stream(stream);
  for (const auto& [memory, allocation] : memories) {
    cl().clReleaseMemObject(static_cast<cl_mem>(memory));
  }
  delete device;
}

void OpenclPlugin::device_synchronize(oar_device_t device) {
  require_not_null(device, "device");
  std::vector<oar_stream_s*> streams;
  {
    std::lock_guard<std::mutex> lock(device->mutex);
    streams.assign(device->streams.begin(), device->streams.end());
  }
  // Finish them all before reporting, so that the device is idle when the
  // first error comes back.
  oar_status_t first = OAR_STATUS_OK;
  std::string message;
  for (oar_stream_s* stream : streams) {
    try {
      stream_synchronize(stream);
    } catch (const oar::sdk::Error& e) {
      if (first == OAR_STATUS_OK) {
        first = e.code();
        message = e.what();
      }
    }
  }
  if (first != OAR_STATUS_OK) throw oar::sdk::Error(first, message);
}

void OpenclPlugin::device_memory_info(oar_device_t device, uint64_t* out_free,
                                      uint64_t* out_total) {
  require_not_null(device, "device");
  require_not_null(out_free, "out_free");
  require_not_null(out_total, "out_total");
  // OpenCL 1.2 has no query for free memory: report what this plugin's live
  // allocations leave of the device's global memory.
  uint64_t total = device->physical->properties.total_memory;
  const PhysicalDevice* physical = device->physical;
  uint64_t used = allocations_.allocated_bytes(
      [physical](const oar_device_s* owner) { return owner->physical == physical; });
  *out_free = used >= total ? 0 : total - used;
  *out_total = total;
}

}  // namespace oar::opencl

OAR_PLUGIN_DEFINE(oar::opencl::OpenclPlugin, "opencl", "0.1.0", "OAR project")
