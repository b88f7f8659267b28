// What every host-side kernel of the opencl and level_zero plugins is built
// from: views of the call's tensors (a buffer + byte offset, range-checked),
// the geometry structs the .cl sources declare, and launching a kernel of a
// program for a dtype on the call's stream. Kernels check shapes and
// attributes on the calling thread, so a bad call fails at once with a
// message.
//
// The kernels (kernels/*.cc) are written once, against Backend below: the
// opencl plugin implements it with cl_kernel objects and
// clEnqueueNDRangeKernel (backend.cc), the level_zero plugin with kernels of
// the same .cl sources compiled to SPIR-V, zeKernelSetArgumentValue and
// zeCommandListAppendLaunchKernel. A buffer argument is the same 8 bytes in
// both: a cl_mem there, a USM pointer here, always followed by its byte
// offset where the kernel takes one.
#pragma once

#include <CL/cl_platform.h>  // cl_int, cl_long...: the .cl sources' scalar types

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "oar/ops.hpp"
#include "oar/sdk/kernel.hpp"

namespace oar::opencl {

// A tensor as a kernel sees it; strides and shape in elements.
// A buffer as a kernel argument: the plugin's memory handle (oar_memory_t),
// a cl_mem in the opencl plugin, a USM pointer in the level_zero plugin.
using Buffer = void*;

struct View {
  Buffer memory = nullptr;
  uint64_t offset = 0;  // bytes
  DLDataType dtype{};
  int ndim = 0;
  int64_t shape[ops::kMaxDims] = {};
  int64_t strides[ops::kMaxDims] = {};

  int64_t numel() const;
  bool contiguous() const;
  size_t element_size() const { return size_t(dtype.bits / 8); }
};

// Mirrors geo_t of kernels/common.cl (all fields 64-bit: one layout on both
// sides).
struct Geo {
  int64_t rank = 0;
  int64_t numel = 0;
  int64_t shape[ops::kMaxDims] = {};
  int64_t strides[4][ops::kMaxDims] = {};
  int64_t offsets[4] = {};
};

// The program sources (kernels/*.cl).
enum class Source {
  kElementwise,
  kReduction,
  kNn,
  kGrad,
  kNnGrad,
  kOptimizer,
  kLayoutV2,
  kMathV2,
  kGemm,
};

// The tag kernels/common.cl names |dtype| by ("f32").
const char* dtype_tag(DLDataType dtype);

// A float attribute as kernels/common.cl's real_arg: double in programs built
// with OAR_HAS_FP64 (the opencl plugin's, on devices with fp64), float
// otherwise.
struct Real {
  double wide;
  float narrow;
  bool is_wide;
};

// One kernel argument: a value of any type (copied by clSetKernelArg /
// zeKernelSetArgumentValue) or |bytes| of local memory (data null in both
// APIs).
struct KArg {
  size_t size;
  const void* data;
  // A float attribute (real_arg): both widths, for a backend whose programs'
  // real_arg is not the device's choice (level_zero: double only in the f64
  // modules); size and data hold the device's choice.
  const Real* real = nullptr;
  template <typename T>
  KArg(const T& value) : size(sizeof(T)), data(&value) {}  // NOLINT: implicit on purpose
  static KArg local(size_t bytes) {
    KArg arg(0);
    arg.size = bytes;
    arg.data = nullptr;
    return arg;
  }
};

// A kernel name of static storage with a fixed id, so that a launch finds its
// cl_kernel without building, hashing or comparing strings (ProgramCache keeps
// the kernels resolved per id). Ids are handed out once per process, in order;
// those past ProgramCache::kRefs are looked up by name as before.
struct KernelRef {
  explicit KernelRef(const char* kernel_name);
  const char* name;
  size_t id;
};

// What a kernel asks of the device it runs on.
struct DeviceTraits {
  bool fp64 = false;
  size_t max_work_group_size = 1;
  int32_t kind = OAR_DEVICE_KIND_OTHER;  // oar_device_kind_e
  // Whether programs are built from the sources at run time, so that a kernel
  // may ask for a specialised text (KernelName::defines; gemm's tile shape):
  // opencl. level_zero's modules are compiled offline with the sources'
  // defaults.
  bool builds_at_run_time = false;
};

// A kernel of a program: kernels/<source>.cl built for |dtype|.
struct KernelName {
  Source source;
  DLDataType dtype;
  const char* name;
  const KernelRef* ref = nullptr;  // the same name with an id, or null
  // #defines put before the source (only where builds_at_run_time); the
  // program of (source, dtype) is built with the first text asked for.
  const char* defines = nullptr;
};

// The launch layer a plugin implements for the kernels. Every method may throw
// oar::sdk::Error. |call| is the operator call (its device and stream are the
// plugin's own).
class Backend {
 public:
  virtual const char* name() const = 0;  // "opencl": the plugin, in messages
  virtual DeviceTraits traits(const oar_kernel_call_t& call) const = 0;
  // Throws unless [span.offset, span.offset + span.size) lies in the
  // allocation |memory| (a tensor's data) of the call's device.
  virtual void check_view(const oar_kernel_call_t& call, Buffer memory,
                          const oar::sdk::ByteSpan& span, const char* what) const = 0;
  // The stream's error record (3 longs, zero until a kernel's index_error
  // writes it: common.cl), created on first use; its failure surfaces when
  // the stream is next synchronized.
  virtual Buffer error_flag(const oar_kernel_call_t& call) const = 0;
  // |kernel| over |global| work-items in one dimension; the kernel checks its
  // bound, so the backend may pad the range to its work-group size.
  virtual void launch_1d(const oar_kernel_call_t& call, const KernelName& kernel, int64_t global,
                         std::initializer_list<KArg> args) const = 0;
  // |kernel| over exactly |global| (|dims| <= 3) in groups of |local|, or of
  // a shape the backend picks that divides |global| where |local| is null.
  virtual void launch_nd(const oar_kernel_call_t& call, const KernelName& kernel, uint32_t dims,
                         const size_t* global, const size_t* local,
                         std::initializer_list<KArg> args) const = 0;
  // |bytes| at |offset| of |memory| set to repeats of |pattern| (1, 2, 4 or 8
  // bytes; |offset| and |bytes| multiples of it).
  virtual void fill(const oar_kernel_call_t& call, Buffer memory, uint64_t offset,
                    const void* pattern, size_t pattern_size, uint64_t bytes) const = 0;
  // |bytes| from (|from|, |from_offset|) to (|to|, |to_offset|); the ranges
  // do not overlap.
  virtual void copy(const oar_kernel_call_t& call, Buffer from, uint64_t from_offset, Buffer to,
                    uint64_t to_offset, uint64_t bytes) const = 0;

 protected:
  ~Backend() = default;
};

// The operator whose kernel wrote |code| into a stream's error record
// (common.cl's index_error callers): "index_select", or "a kernel".
const char* index_error_operator(int32_t code);

// The views of a call's inputs or outputs: inline for the usual few, on the
// heap only for more (a long concat), so that a call allocates nothing.
class ViewList {
 public:
  ViewList() = default;
  ViewList(const ViewList&) = delete;
  ViewList& operator=(const ViewList&) = delete;
  // Room for |count| views (call once, before the first add).
  void reserve(size_t count);
  // A new zeroed view at the end (no more than reserved).
  View& add() { return *new (data_ + size_++) View(); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const View& operator[](size_t i) const { return data_[i]; }
  View& operator[](size_t i) { return data_[i]; }
  const View* begin() const { return data_; }
  const View* end() const { return data_ + size_; }

 private:
  static constexpr size_t kInline = 4;
  static_assert(std::is_trivially_destructible<View>::value, "views are never destroyed");
  alignas(View) unsigned char inline_[kInline * sizeof(View)];  // raw: no zeroing per call
  std::unique_ptr<unsigned char[]> heap_;
  View* data_ = reinterpret_cast<View*>(inline_);
  size_t size_ = 0;
};

struct KernelContext {
  const oar_kernel_call_t* call;
  const ops::OpSchema& schema;
  ops::Attrs attrs;
  ViewList inputs;
  ViewList outputs;
  // What register_op was given for the operator (body-specific: unary's
  // kernel, binary's contiguous and strided kernels); may be null.
  const KernelRef* const* kernels = nullptr;
  const Backend* backend = nullptr;

  DeviceTraits traits() const { return backend->traits(*call); }
  Real real(double value) const { return {value, float(value), traits().fp64}; }
  // The stream's error flag, for kernels that can fail on an index.
  Buffer error_flag() const { return backend->error_flag(*call); }
  // Enqueues |kernel| of |source| built for |dtype| over |global| work-items
  // (1-D, padded to the work-group size; kernels check their bound).
  void launch(Source source, DLDataType dtype, const char* kernel, int64_t global,
              std::initializer_list<KArg> args) const;
  // The same for a kernel resolved once (no lookup by name after the first).
  void launch(Source source, DLDataType dtype, const KernelRef& kernel, int64_t global,
              std::initializer_list<KArg> args) const;
  // The same with an explicit N-D range and work-group size (Backend::launch_nd).
  void launch_nd(Source source, DLDataType dtype, const char* kernel, cl_uint dims,
                 const size_t* global, const size_t* local, std::initializer_list<KArg> args) const;
  void launch_nd(const KernelName& kernel, cl_uint dims, const size_t* global, const size_t* local,
                 std::initializer_list<KArg> args) const;
  // Throws UNIMPLEMENTED for f64 on a device without fp64.
  void require_dtype(DLDataType dtype) const;
  // Backend::fill and Backend::copy on the call's stream.
  void fill(Buffer memory, uint64_t offset, const void* pattern, size_t pattern_size,
            uint64_t bytes) const {
    backend->fill(*call, memory, offset, pattern, pattern_size, bytes);
  }
  void copy(Buffer from, uint64_t from_offset, Buffer to, uint64_t to_offset,
            uint64_t bytes) const {
    backend->copy(*call, from, from_offset, to, to_offset, bytes);
  }
};

inline KArg real_arg(const Real& r) {
  KArg arg = r.is_wide ? KArg(r.wide) : KArg(r.narrow);
  arg.real = &r;
  return arg;
}

using KernelBody = void (*)(KernelContext& context);

// Registers |body| for |op| with one signature per entry of |signatures|
// (input dtypes then output dtypes).
// |kernels| (static storage, may be null) becomes KernelContext::kernels.
void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags = 0,
                 const KernelRef* const* kernels = nullptr);
using oar::sdk::same_signatures;

// Row-major strides, and |axis| normalised into [0, rank): the SDK's.
using oar::sdk::contiguous_strides;
using oar::sdk::normalize_axis;

void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_gemm_kernels(const oar::sdk::KernelRegistrar& registrar);  // matmul

// Registers every operator above, launched through |backend| (which lives as
// long as the plugin). A plugin calls it once.
void register_all_kernels(const oar::sdk::KernelRegistrar& registrar, const Backend& backend);

// kernels/layout.cc: copies |from| into |to| (same shape; any strides on both
// sides) with the copy kernel; transpose, slice and concat are such copies.
void copy_view(const KernelContext& context, const View& from, const View& to);

}  // namespace oar::opencl
