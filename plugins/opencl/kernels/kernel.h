// What every host-side kernel of the opencl plugin is built from: views of
// the call's tensors (cl_mem + byte offset, range-checked), the geometry
// structs the .cl sources declare, and launching a kernel of a program for a
// dtype on the call's stream. Kernels check shapes and attributes on the
// calling thread, so a bad call fails at once with a message.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kernel_signatures.h"
#include "oar/ops.hpp"
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
enum class Source { kElementwise, kReduction, kNn };

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

struct KernelContext {
  const oar_kernel_call_t* call;
  const ops::OpSchema& schema;
  ops::Attrs attrs;
  std::vector<View> inputs;
  std::vector<View> outputs;

  PhysicalDevice& device() const { return *call->device->physical; }
  Real real(double value) const { return {value, float(value), device().fp64}; }
  // The stream's error flag, for kernels that can fail on an index.
  cl_mem error_flag() const { return opencl::error_flag(call->stream); }
  // Enqueues |kernel| of |source| built for |dtype| over |global| work-items
  // (1-D, padded to the work-group size; kernels check their bound).
  void launch(Source source, DLDataType dtype, const char* kernel, int64_t global,
              std::initializer_list<KArg> args) const;
  // The same with an explicit N-D range and work-group size.
  void launch_nd(Source source, DLDataType dtype, const char* kernel, cl_uint dims,
                 const size_t* global, const size_t* local, std::initializer_list<KArg> args) const;
};

inline KArg real_arg(const Real& r) { return r.is_wide ? KArg(r.wide) : KArg(r.narrow); }

using KernelBody = void (*)(KernelContext& context);

// Registers |body| for |op| with one signature per entry of |signatures|
// (input dtypes then output dtypes).
void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags = 0);
using oar::plugin::same_signatures;

// Contiguous (row-major) strides of |shape|.
void contiguous_strides(int ndim, const int64_t* shape, int64_t* out);
// |axis| normalised into [0, rank) (rank 0 accepts 0).
int normalize_axis(int64_t axis, int rank, const char* what);

void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar);

// kernels/layout.cc: copies |from| into |to| (same shape; any strides on both
// sides) with the copy kernel; transpose, slice and concat are such copies.
void copy_view(const KernelContext& context, const View& from, const View& to);

}  // namespace oar::opencl
