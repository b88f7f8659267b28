// The opencl plugin's Backend (kernels/kernel.h): the kernels of
// kernels/*.cc launched as cl_kernel objects of the ProgramCache
// (program.h) with clSetKernelArg and clEnqueueNDRangeKernel on the stream's
// queue; fills and copies as clEnqueueFillBuffer and clEnqueueCopyBuffer.
#include <map>
#include <mutex>
#include <string>

#include "kernels/kernel.h"
#include "oar_cl/elementwise_cl.h"
#include "oar_cl/gemm_cl.h"
#include "oar_cl/grad_cl.h"
#include "oar_cl/layout_v2_cl.h"
#include "oar_cl/math_v2_cl.h"
#include "oar_cl/nn_cl.h"
#include "oar_cl/nn_grad_cl.h"
#include "oar_cl/optimizer_cl.h"
#include "oar_cl/reduction_cl.h"
#include "opencl.h"
#include "program.h"

namespace oar::opencl {
namespace {

struct SourceInfo {
  const char* name;
  const char* text;
};

SourceInfo source_info(Source source) {
  switch (source) {
    case Source::kElementwise:
      return {"elementwise", kClElementwiseSource};
    case Source::kReduction:
      return {"reduction", kClReductionSource};
    case Source::kNn:
      return {"nn", kClNnSource};
    case Source::kGrad:
      return {"grad", kClGradSource};
    case Source::kNnGrad:
      return {"nn_grad", kClNnGradSource};
    case Source::kOptimizer:
      return {"optimizer", kClOptimizerSource};
    case Source::kLayoutV2:
      return {"layout_v2", kClLayoutV2Source};
    case Source::kMathV2:
      return {"math_v2", kClMathV2Source};
    case Source::kGemm:  // kernels/gemm.cc adds the device's tile shape
      return {"gemm", kClGemmSource};
  }
  return {"", ""};
}

// |defines| + the source's text, kept for the life of the process (gemm's
// tile shapes: at most three).
const char* text_with(const char* defines, const char* text) {
  static std::mutex mutex;
  static std::map<const char*, std::string>* texts = new std::map<const char*, std::string>();
  std::lock_guard<std::mutex> lock(mutex);
  auto found = texts->find(defines);
  if (found == texts->end()) found = texts->emplace(defines, std::string(defines) + text).first;
  return found->second.c_str();
}

PhysicalDevice& physical(const oar_kernel_call_t& call) { return *call.device->physical; }

// The program slot of (source, dtype): one per dtype bit (1 << 0 .. 1 << 15).
// Throws for dtypes outside the set (KernelContext refused f64 without
// cl_khr_fp64 already).
size_t program_slot(Source source, DLDataType dtype, const char** tag) {
  uint32_t bit = ops::dtype_bit(dtype);
  *tag = dtype_tag(dtype);  // throws for dtypes outside the set
  return size_t(source) * 16 + size_t(__builtin_ctz(bit));
}

KernelSlot& find_kernel(const oar_kernel_call_t& call, const KernelName& kernel) {
  const char* tag = nullptr;
  size_t slot = program_slot(kernel.source, kernel.dtype, &tag);
  ProgramCache& programs = *physical(call).programs;
  if (kernel.ref != nullptr) {
    if (KernelSlot* found = programs.resolved(slot, kernel.ref->id)) return *found;
  }
  SourceInfo info = source_info(kernel.source);
  const char* text = kernel.defines != nullptr ? text_with(kernel.defines, info.text) : info.text;
  if (kernel.ref != nullptr) {
    return programs.kernel(slot, kernel.ref->id, info.name, text, tag, kernel.name);
  }
  return programs.kernel(slot, info.name, text, tag, kernel.name);
}

void enqueue(const oar_kernel_call_t& call, KernelSlot& slot, const char* kernel, cl_uint dims,
             const size_t* global, const size_t* local, std::initializer_list<KArg> args) {
  // Arguments and enqueue under the kernel's lock: another stream may use the
  // same cl_kernel, and enqueueing captures the arguments.
  std::lock_guard<std::mutex> lock(slot.mutex);
  cl_uint index = 0;
  for (const KArg& arg : args) {
    cl_int code = cl().clSetKernelArg(slot.kernel, index, arg.size, arg.data);
    if (code != CL_SUCCESS) {
      check(code,
            (std::string("clSetKernelArg(") + kernel + ", " + std::to_string(index) + ")").c_str());
    }
    ++index;
  }
  cl_int code = cl().clEnqueueNDRangeKernel(call.stream->queue, slot.kernel, dims, nullptr, global,
                                            local, 0, nullptr, nullptr);
  if (code != CL_SUCCESS) {
    check(code, (std::string("clEnqueueNDRangeKernel(") + kernel + ")").c_str());
  }
}

class OpenclBackend final : public Backend {
 public:
  const char* name() const override { return "opencl"; }

  DeviceTraits traits(const oar_kernel_call_t& call) const override {
    const PhysicalDevice& device = physical(call);
    DeviceTraits traits;
    traits.fp64 = device.fp64;
    traits.max_work_group_size = device.max_work_group_size;
    traits.kind = device.properties.kind;
    traits.builds_at_run_time = true;
    return traits;
  }

  void check_view(const oar_kernel_call_t&, Buffer memory, const oar::sdk::ByteSpan& span,
                  const char* what) const override {
    // The common case checked here without building check_range's messages;
    // anything else (NULL, unknown, out of range) through check_range, which
    // throws with them.
    AllocationTable::Allocation allocation;
    if (memory != nullptr && plugin().allocations().find(memory, &allocation) &&
        span.offset <= allocation.size && span.size <= allocation.size - span.offset) {
      return;
    }
    plugin().allocations().check_range(memory, span.offset, span.size, what);
  }

  Buffer error_flag(const oar_kernel_call_t& call) const override {
    return opencl::error_flag(call.stream);
  }

  // |global| work-items, padded to the work-group size unless one small
  // group does.
  void launch_1d(const oar_kernel_call_t& call, const KernelName& kernel, int64_t global,
                 std::initializer_list<KArg> args) const override {
    KernelSlot& slot = find_kernel(call, kernel);
    size_t most = physical(call).max_work_group_size;
    size_t group = most < 64 ? most : 64;
    if (size_t(global) <= group) {
      // One small group: let the driver pick its shape, as a plain
      // clEnqueueNDRangeKernel would (PoCL runs a 1-item range faster).
      size_t exact = size_t(global);
      enqueue(call, slot, kernel.name, 1, &exact, nullptr, args);
      return;
    }
    size_t padded = (size_t(global) + group - 1) / group * group;
    enqueue(call, slot, kernel.name, 1, &padded, &group, args);
  }

  void launch_nd(const oar_kernel_call_t& call, const KernelName& kernel, uint32_t dims,
                 const size_t* global, const size_t* local,
                 std::initializer_list<KArg> args) const override {
    KernelSlot& slot = find_kernel(call, kernel);
    enqueue(call, slot, kernel.name, dims, global, local, args);
  }

  void fill(const oar_kernel_call_t& call, Buffer memory, uint64_t offset, const void* pattern,
            size_t pattern_size, uint64_t bytes) const override {
    check(cl().clEnqueueFillBuffer(call.stream->queue, static_cast<cl_mem>(memory), pattern,
                                   pattern_size, offset, bytes, 0, nullptr, nullptr),
          "clEnqueueFillBuffer");
  }

  void copy(const oar_kernel_call_t& call, Buffer from, uint64_t from_offset, Buffer to,
            uint64_t to_offset, uint64_t bytes) const override {
    check(cl().clEnqueueCopyBuffer(call.stream->queue, static_cast<cl_mem>(from),
                                   static_cast<cl_mem>(to), from_offset, to_offset, bytes, 0,
                                   nullptr, nullptr),
          "clEnqueueCopyBuffer");
  }
};

}  // namespace

void OpenclPlugin::register_kernels(const oar_kernel_registrar_t* registrar) {
  require_not_null(registrar, "registrar");
  static const OpenclBackend backend;
  oar::sdk::KernelRegistrar kernels(registrar);
  register_all_kernels(kernels, backend);
}

}  // namespace oar::opencl
