// What every host-side kernel of the opencl plugin is built from: views of
// the call's tensors (cl_mem + byte offset, range-checked), the geometry
// structs the .cl sources declare, and launching a kernel of a program for a
// dtype on the call's stream. Kernels check shapes and attributes on the
// calling thread, so a bad call fails at once with a message.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "oar/ops.hpp"
#include "oar/sdk/kernel.hpp"
#include "opencl.h"

namespace oar::opencl {

// A tensor as a kernel sees it; strides and shape in elements.
struct View {
  cl_mem memory = nullptr;
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

// One kernel argument: a value of any type (copied by clSetKernelArg) or
// |bytes| of local memory.
struct KArg {
  size_t size;
  const void* data;
  template <typename T>
  KArg(const T& value) : size(sizeof(T)), data(&value) {}  // NOLINT: implicit on purpose
  static KArg local(size_t bytes) {
    KArg arg(0);
    arg.size = bytes;
    arg.data = nullptr;
    return arg;
  }
};

// A float attribute as kernels/common.cl's real_arg: double on devices with
// fp64, float otherwise.
struct Real {
  double wide;
  float narrow;
  bool is_wide;
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

  PhysicalDevice& device() const { return *call->device->physical; }
  Real real(double value) const { return {value, float(value), device().fp64}; }
  // The stream's error flag, for kernels that can fail on an index.
  cl_mem error_flag() const { return opencl::error_flag(call->stream); }
  // Enqueues |kernel| of |source| built for |dtype| over |global| work-items
  // (1-D, padded to the work-group size; kernels check their bound).
  void launch(Source source, DLDataType dtype, const char* kernel, int64_t global,
              std::initializer_list<KArg> args) const;
  // The same for a kernel resolved once (no lookup by name after the first).
  void launch(Source source, DLDataType dtype, const KernelRef& kernel, int64_t global,
              std::initializer_list<KArg> args) const;
  // The same with an explicit N-D range and work-group size.
  void launch_nd(Source source, DLDataType dtype, const char* kernel, cl_uint dims,
                 const size_t* global, const size_t* local, std::initializer_list<KArg> args) const;
};

inline KArg real_arg(const Real& r) { return r.is_wide ? KArg(r.wide) : KArg(r.narrow); }

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

// kernels/layout.cc: copies |from| into |to| (same shape; any strides on both
// sides) with the copy kernel; transpose, slice and concat are such copies.
void copy_view(const KernelContext& context, const View& from, const View& to);

}  // namespace oar::opencl
