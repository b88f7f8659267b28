// The hip plugin: AMD GPUs (and Hygon DCUs) through the HIP runtime, loaded at
// run time (runtime.h). Without the runtime or a device it loads, serves zero
// devices and says why (a warning through the host's logger, shown by
// `oar list`).
//
// The kernels are the cuda plugin's (plugins/cuda/kernels/kernels.cu, CUDA C++
// that hipcc compiles), embedded as one clang offload bundle of code objects,
// one per gfx target, and loaded with hipModuleLoadData. The operators are the
// cuda plugin's too (plugins/cuda/operators.cc): this file is their Launcher.
// matmul is always OAR's own kernel (Debian 12 has no hipBLAS); there are no
// collective slots (no RCCL): the core's host-staged engine serves
// collectives.
//
// Handles: an oar_memory_t is the address of a device allocation (hipMalloc)
// or of pinned host memory (hipHostMalloc); streams and events wrap
// hipStream_t / hipEvent_t. The runtime keeps a current device per thread:
// every call makes the handle's device current first.
//
// Errors: a failed runtime call throws with the hipError_t's name. Streams,
// events, host callbacks and the asynchronous error model (a faulting kernel
// fails its stream) are plugins/common/gpu_stream.h's, shared with the cuda
// plugin; RuntimeApi below is the runtime's part of them.
//
// Shutdown order (device_close, and finalize for devices a host leaked): the
// streams (synchronized, pending callbacks settled, destroyed), the events,
// the allocations, then the module.
#include "oar/sdk/plugin.hpp"

#include <dlpack/dlpack.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "gpu_stream.h"
#include "kernels_image.h"
#include "oar/dtype.hpp"
#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/kernel.hpp"
#include "operators.h"
#include "runtime.h"

#ifndef OAR_HIP_TARGETS
#error "OAR_HIP_TARGETS (the gfx targets of the embedded code objects, comma separated) is unset"
#endif

namespace oar::hip {
namespace sdk = oar::sdk;
using cuda::ArgPack;
using cuda::Gemm;
using cuda::kBlock;
using cuda::kMaxGrid;

constexpr uint64_t kAlignment = 256;  // hipMalloc aligns to at least this

// The gfx targets of the embedded code objects ("gfx90a,gfx1030").
std::vector<std::string> targets() {
  std::vector<std::string> list;
  const std::string all = OAR_HIP_TARGETS;
  for (size_t start = 0; start < all.size();) {
    size_t comma = all.find(',', start);
    if (comma == std::string::npos) comma = all.size();
    if (comma > start) list.push_back(all.substr(start, comma - start));
    start = comma + 1;
  }
  return list;
}

// What the hardware of a gfx target computes itself (docs/abi.md, "Native
// arithmetic"): f16 and f64 on every target; bf16 in the matrix cores of
// CDNA 1-3 (gfx908, gfx90a, gfx94x); int8 dot products (v_dot4_i32_i8) on
// gfx906, CDNA and RDNA 1.1/2.
uint32_t native_dtypes(const std::string& arch) {
  uint32_t bits = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_F64;
  if (arch == "gfx908" || arch == "gfx90a" || arch.rfind("gfx94", 0) == 0) {
    bits |= OAR_DTYPE_SUPPORT_BF16;
  }
  if (arch == "gfx906" || arch == "gfx908" || arch == "gfx90a" || arch.rfind("gfx94", 0) == 0 ||
      arch == "gfx1011" || arch == "gfx1012" || arch.rfind("gfx103", 0) == 0) {
    bits |= OAR_DTYPE_SUPPORT_INT8_DOT;
  }
  return bits;
}

// What a failure of the runtime becomes in OAR's codes.
oar_status_t status_of(hipError_t result) {
  switch (result) {
    case hipSuccess:
      return OAR_STATUS_OK;
    case hipErrorOutOfMemory:
      return OAR_STATUS_RESOURCE_EXHAUSTED;
    case hipErrorInvalidValue:
    case hipErrorInvalidHandle:
    case hipErrorInvalidDevicePointer:
      return OAR_STATUS_INVALID_ARGUMENT;
    case hipErrorNoDevice:
    case hipErrorInvalidDevice:
      return OAR_STATUS_UNAVAILABLE;
    case hipErrorLaunchTimeOut:
      return OAR_STATUS_DEADLINE_EXCEEDED;
    case hipErrorECCNotCorrectable:
      return OAR_STATUS_DATA_LOSS;
    case hipErrorNotFound:
      return OAR_STATUS_NOT_FOUND;
    case hipErrorNotSupported:
      return OAR_STATUS_UNIMPLEMENTED;
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorAssert:
      return OAR_STATUS_ABORTED;
    default:
      return OAR_STATUS_INTERNAL;
  }
}

// The errors of asynchronous work after which the device is unusable: they
// fail the stream that reports them.
bool is_sticky(hipError_t result) {
  switch (result) {
    case hipErrorIllegalAddress:
    case hipErrorLaunchFailure:
    case hipErrorLaunchTimeOut:
    case hipErrorECCNotCorrectable:
    case hipErrorAssert:
      return true;
    default:
      return false;
  }
}

// The HIP runtime as plugins/common/gpu_stream.h sees it.
struct RuntimeApi {
  using Result = hipError_t;
  using Stream = hipStream_t;
  using Event = hipEvent_t;
  using DevicePtr = void*;
  static constexpr Result kSuccess = hipSuccess;
  static constexpr Result kNotReady = hipErrorNotReady;
  static constexpr const char* kPlugin = "hip";
  static constexpr const char* kMakeCurrent = "hipSetDevice";
  static constexpr const char* kDeviceSynchronize = "hipDeviceSynchronize";
  static constexpr const char* kStreamCreate = "hipStreamCreateWithFlags";
  static constexpr const char* kStreamQuery = "hipStreamQuery";
  static constexpr const char* kStreamSynchronize = "hipStreamSynchronize";
  static constexpr const char* kStreamWaitEvent = "hipStreamWaitEvent";
  static constexpr const char* kAddHostCallback = "hipStreamAddCallback";
  static constexpr const char* kEventCreate = "hipEventCreateWithFlags";
  static constexpr const char* kEventRecord = "hipEventRecord";
  static constexpr const char* kEventQuery = "hipEventQuery";
  static constexpr const char* kEventSynchronize = "hipEventSynchronize";
  static constexpr const char* kEventElapsed = "hipEventElapsedTime";

  static constexpr const char* kMemGetInfo = "hipMemGetInfo";
  static constexpr const char* kAllocDevice = "hipMalloc";
  static constexpr const char* kAllocHost = "hipHostMalloc";
  static constexpr const char* kCopyToDevice = "hipMemcpyHtoDAsync";
  static constexpr const char* kCopyToHost = "hipMemcpyDtoHAsync";
  static constexpr const char* kCopyOnDevice = "hipMemcpyDtoDAsync";
  static constexpr const char* kLaunch = "hipModuleLaunchKernel";
  static constexpr const char* kFill = "hipMemsetD8Async";

  static oar_status_t status_of(Result result) { return hip::status_of(result); }
  static bool is_sticky(Result result) { return hip::is_sticky(result); }
  std::string error_text(Result result) const { return runtime.error_text(result); }

  Result make_current(const oar_device_s* device) const;
  Result device_synchronize() const { return runtime.hipDeviceSynchronize(); }
  Result stream_create(Stream* stream) const {
    return runtime.hipStreamCreateWithFlags(stream, hipStreamNonBlocking);
  }
  Result stream_destroy(Stream stream) const { return runtime.hipStreamDestroy(stream); }
  Result stream_query(Stream stream) const { return runtime.hipStreamQuery(stream); }
  Result stream_synchronize(Stream stream) const { return runtime.hipStreamSynchronize(stream); }
  Result stream_wait_event(Stream stream, Event event) const {
    return runtime.hipStreamWaitEvent(stream, event, 0);
  }
  Result add_host_callback(Stream stream, gpu::HostCallback* callback) const {
    return runtime.hipStreamAddCallback(stream, &host_function, callback, 0);
  }
  Result event_create(Event* event, bool timing) const {
    return runtime.hipEventCreateWithFlags(event, timing ? hipEventDefault : hipEventDisableTiming);
  }
  Result event_destroy(Event event) const { return runtime.hipEventDestroy(event); }
  Result event_record(Event event, Stream stream) const {
    return runtime.hipEventRecord(event, stream);
  }
  Result event_query(Event event) const { return runtime.hipEventQuery(event); }
  Result event_synchronize(Event event) const { return runtime.hipEventSynchronize(event); }
  Result event_elapsed(float* ms, Event start, Event end) const {
    return runtime.hipEventElapsedTime(ms, start, end);
  }
  Result copy_to_host(void* dst, DevicePtr src, size_t size, Stream stream) const {
    return runtime.hipMemcpyDtoHAsync(dst, src, size, stream);
  }
  Result free(DevicePtr memory) const { return runtime.hipFree(memory); }
  Result free_host(void* memory) const { return runtime.hipHostFree(memory); }
  Result mem_get_info(size_t* free, size_t* total) const {
    return runtime.hipMemGetInfo(free, total);
  }
  Result alloc_device(void** address, size_t size) const {
    return runtime.hipMalloc(address, size);
  }
  Result alloc_host(void** address, size_t size) const {
    return runtime.hipHostMalloc(address, size, hipHostMallocPortable);
  }
  Result copy_to_device(DevicePtr dst, const void* src, size_t size, Stream stream) const {
    return runtime.hipMemcpyHtoDAsync(dst, const_cast<void*>(src), size, stream);
  }
  Result copy_on_device(DevicePtr dst, DevicePtr src, size_t size, Stream stream) const {
    return runtime.hipMemcpyDtoDAsync(dst, src, size, stream);
  }
  Result fill(DevicePtr dst, uint8_t value, size_t size, Stream stream) const {
    return runtime.hipMemsetD8Async(dst, value, size, stream);
  }
  // One launch of |function|, its parameters packed in one buffer
  // (HIP_LAUNCH_PARAM_BUFFER_POINTER).
  Result launch(hipFunction_t function, uint32_t grid, uint32_t block, Stream stream,
                const void* params, size_t size) const {
    void* extra[] = {HIP_LAUNCH_PARAM_BUFFER_POINTER, const_cast<void*>(params),
                     HIP_LAUNCH_PARAM_BUFFER_SIZE, &size, HIP_LAUNCH_PARAM_END};
    return runtime.hipModuleLaunchKernel(function, grid, 1, 1, block, 1, 1, 0, stream, nullptr,
                                         extra);
  }
  static DevicePtr address(oar_memory_t memory, uint64_t offset) {
    return static_cast<char*>(static_cast<void*>(memory)) + offset;
  }

  // hipStreamAddCallback's function: the runtime calls it on its own thread
  // once the stream's earlier work completed (|status| their error, if any).
  // (Debian's libamdhip64.so.5 5.2 does not export hipLaunchHostFunc.)
  static void host_function(hipStream_t, hipError_t status, void* callback);

  const Runtime& runtime;
};

}  // namespace oar::hip

struct oar_device_s;

struct oar_stream_s : oar::gpu::StreamState<oar::hip::RuntimeApi> {};
struct oar_event_s : oar::gpu::EventState<oar::hip::RuntimeApi> {};

struct oar_device_s {
  int32_t index = 0;  // OAR's index
  int ordinal = 0;    // the runtime's
  hipModule_t module = nullptr;
  std::map<std::string, hipFunction_t> functions;  // every kernel of the module
  std::mutex mutex;
  std::unordered_set<oar_stream_s*> streams;
  std::unordered_set<oar_event_s*> events;
};

namespace oar::hip {

class HipPlugin final : public cuda::Launcher, public gpu::GpuStreams<HipPlugin, RuntimeApi> {
 public:
  HipPlugin() {
    const std::string why = discover();
    if (!why.empty()) {
      sdk::log(OAR_LOG_LEVEL_WARNING, "hip: " + why + ". The plugin serves 0 devices.");
    }
  }

  ~HipPlugin() override { close_all(); }

  // --- operators (the cuda plugin's, plugins/cuda/operators.cc) ------------------

  void register_kernels(const oar_kernel_registrar_t* registrar) {
    sdk::require_not_null(registrar, "registrar");
    cuda::register_operators(sdk::KernelRegistrar(registrar), table_, this);
  }

  void check_tensor(const oar_kernel_call_t& call, const DLTensor& t,
                    const char* what) const override {
    check_call_tensor(call, t, what);
  }

  void launch(const oar_kernel_call_t& call, const char* kernel, uint32_t grid,
              const ArgPack& args) override {
    launch_kernel(call, kernel, grid, kMaxGrid, kBlock, args.data(), args.size());
  }

  // No BLAS library (Debian 12 has no hipBLAS): matmul runs OAR's kernel.
  bool gemm(const oar_kernel_call_t&, const Gemm&) override { return false; }

  uint64_t error_word(const oar_kernel_call_t& call) override {
    return stream_error_word(call.stream);
  }

  // --- devices ------------------------------------------------------------------

  void device_count(int32_t* out_count) {
    sdk::require_not_null(out_count, "out_count");
    *out_count = int32_t(devices_.size());
  }

  void device_properties(int32_t index, oar_device_properties_t* out_properties) {
    require_index(index);
    sdk::copy_properties(devices_[size_t(index)].properties, out_properties);
  }

  void device_open(int32_t index, oar_device_t* out_device) {
    require_index(index);
    sdk::require_not_null(out_device, "out_device");
    auto device = std::make_unique<oar_device_s>();
    device->index = index;
    device->ordinal = devices_[size_t(index)].ordinal;
    current(device.get());
    std::string what = "hipModuleLoadData";
    hipError_t result = runtime_.hipModuleLoadData(&device->module, cuda::kernel_image());
    for (size_t i = 0; result == hipSuccess && i < cuda::kernel_count(); ++i) {
      hipFunction_t function = nullptr;
      const char* name = cuda::kernel_names()[i];
      what = std::string("hipModuleGetFunction(") + name + ")";
      result = runtime_.hipModuleGetFunction(&function, device->module, name);
      if (result == hipSuccess) device->functions.emplace(name, function);
    }
    if (result != hipSuccess) {
      if (device->module != nullptr) (void)runtime_.hipModuleUnload(device->module);
      check(result, what.c_str());
    }
    *out_device = add_open(std::move(device));
  }

 private:
  struct DeviceInfo {
    int ordinal = 0;
    oar_device_properties_t properties{};
  };

  // Loads the runtime and lists the devices; returns why there are none.
  std::string discover() {
    if (!runtime_.available()) return runtime_.why();
    hipError_t result = runtime_.hipInit(0);
    if (result == hipErrorNoDevice) return "no device (hipInit: hipErrorNoDevice)";
    if (result != hipSuccess) {
      // ROCm reaches AMD GPUs through the amdgpu kernel driver's /dev/kfd.
      return "hipInit failed: " + runtime_.error_name(result) +
             (access("/dev/kfd", F_OK) != 0 ? " (/dev/kfd is absent: no AMD GPU kernel driver)"
                                            : "");
    }
    int count = 0;
    result = runtime_.hipGetDeviceCount(&count);
    if (result == hipErrorNoDevice || (result == hipSuccess && count == 0)) {
      return "no device (hipGetDeviceCount: " + std::to_string(count) + ")";
    }
    if (result != hipSuccess) return "hipGetDeviceCount failed: " + runtime_.error_name(result);
    int version = 0;
    (void)runtime_.hipRuntimeGetVersion(&version);  // major * 10^7 + minor * 10^5 + patch
    const std::string runtime_version = "HIP runtime " + std::to_string(version / 10000000) + "." +
                                        std::to_string(version / 100000 % 100);
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      std::string problem = describe(i, runtime_version, &info);
      if (problem.empty()) {
        devices_.push_back(info);
      } else {
        sdk::log(OAR_LOG_LEVEL_WARNING,
                 "hip: device " + std::to_string(i) + " skipped: " + problem);
      }
    }
    if (devices_.empty()) return "no usable device (" + std::to_string(count) + " skipped)";
    return "";
  }

  std::string describe(int ordinal, const std::string& runtime_version, DeviceInfo* info) {
    hipDeviceProp_t props;
    std::memset(&props, 0, sizeof props);
    hipError_t result = runtime_.hipGetDeviceProperties(&props, ordinal);
    if (result != hipSuccess) return "hipGetDeviceProperties: " + runtime_.error_name(result);
    props.name[sizeof props.name - 1] = '\0';
    props.gcnArchName[sizeof props.gcnArchName - 1] = '\0';
    // "gfx90a:sramecc+:xnack-": the processor, then its features. The code
    // objects are built for the processor with any features.
    std::string arch = props.gcnArchName;
    arch = arch.substr(0, arch.find(':'));
    const std::vector<std::string> built = targets();
    if (std::find(built.begin(), built.end(), arch) == built.end()) {
      std::string list;
      for (const auto& t : built) list += (list.empty() ? "" : ", ") + t;
      return std::string(props.name) + " is " + (arch.empty() ? "an unnamed target" : arch) +
             ", which the plugin's code objects were not built for (" + list +
             "; -DOAR_HIP_ARCHITECTURES)";
    }
    info->ordinal = ordinal;
    oar_device_properties_t& p = info->properties;
    p.struct_size = OAR_DEVICE_PROPERTIES_STRUCT_SIZE;
    sdk::copy_text(p.name, props.name);
    sdk::copy_text(p.vendor, "AMD");
    sdk::copy_text(p.driver_version, runtime_version + ", " + props.gcnArchName);
    p.kind = OAR_DEVICE_KIND_GPU;
    p.dlpack_device_type = kDLROCM;
    p.total_memory = props.totalGlobalMem;
    p.max_allocation_size = props.totalGlobalMem;
    p.min_alignment = kAlignment;
    p.memory_kinds = OAR_MEMORY_KIND_DEVICE | OAR_MEMORY_KIND_HOST_PINNED;
    // The kernels compute f16 and bf16 in f32 on every target; f64 is in
    // every GCN/CDNA/RDNA part.
    p.dtypes = OAR_DTYPE_SUPPORT_F16 | OAR_DTYPE_SUPPORT_BF16 | OAR_DTYPE_SUPPORT_F64;
    p.native_dtypes = native_dtypes(arch);
    p.features = OAR_DEVICE_FEATURE_TIMING_EVENTS | OAR_DEVICE_FEATURE_ASYNC_COPIES |
                 OAR_DEVICE_FEATURE_HOST_CALLBACKS;
    p.compute_units = uint32_t(std::max(props.multiProcessorCount, 0));
    return "";
  }

  void require_index(int32_t index) const {
    sdk::require(index >= 0 && size_t(index) < devices_.size(), OAR_STATUS_OUT_OF_RANGE,
                 "device index " + std::to_string(index) + " is out of range (" +
                     std::to_string(devices_.size()) + " device(s))");
  }

  static void require_device(oar_device_t device) { sdk::require_not_null(device, "device"); }

  const oar_device_properties_t& properties(const oar_device_s* device) const {
    return devices_[size_t(device->index)].properties;
  }

  // Shutdown order: streams, events, memory, module.
  void release(oar_device_s* device) {
    const bool usable = close_handles(device);
    if (usable && device->module != nullptr) (void)runtime_.hipModuleUnload(device->module);
    delete device;
  }

  friend class gpu::GpuStreams<HipPlugin, RuntimeApi>;
  RuntimeApi gpu_api() const { return {runtime_}; }

  Runtime runtime_;  // first member: unloaded last
  std::vector<DeviceInfo> devices_;
  sdk::KernelTable table_;  // the registered operators (called until finalize)
};

RuntimeApi::Result RuntimeApi::make_current(const oar_device_s* device) const {
  return runtime.hipSetDevice(device->ordinal);
}

void RuntimeApi::host_function(hipStream_t, hipError_t status, void* callback) {
  HipPlugin::on_host_callback(static_cast<gpu::HostCallback*>(callback), status_of(status));
}

}  // namespace oar::hip

OAR_PLUGIN_DEFINE(oar::hip::HipPlugin, OAR_PLUGIN_NAME, "0.1.0", "OAR project")
