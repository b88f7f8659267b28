// What every kernel of the adapter shares: a Paddle DenseTensor described as
// the DLTensor OAR's dispatcher takes (data = the OAR allocation handle,
// byte_offset = the offset in it, resolved through the AddressSpace), the OAR
// stream behind a CustomContext, and one call that dispatches an operator and
// turns an oar::Error into a Paddle error naming the device and the kernel.
//
// Only the narrow Paddle headers are used: the umbrella paddle/phi/extension.h
// needs oneDNN and Eigen headers the wheel does not ship, and so does the
// wheel's paddle/phi/config.h (it defines PADDLE_WITH_DNNL); the build
// defines the two macros of it that matter here, PADDLE_WITH_CUSTOM_DEVICE
// and PADDLE_WITH_CUSTOM_KERNEL (no class the adapter uses changes layout
// with PADDLE_WITH_DNNL).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "adapter.h"
#include "paddle/phi/backends/custom/custom_context.h"
#include "paddle/phi/common/int_array.h"
#include "paddle/phi/common/scalar.h"
#include "paddle/phi/core/dense_tensor.h"
#include "paddle/phi/core/kernel_registry.h"

namespace oar_paddle {

DLDataType dl_dtype(phi::DataType dtype);

// A DLTensor over a DenseTensor's memory; |shape| overrides the tensor's own
// dims (a reshape of a contiguous tensor, as matmul's 1-D promotion needs).
class View {
 public:
  explicit View(const phi::DenseTensor& tensor);
  View(const phi::DenseTensor& tensor, std::vector<int64_t> shape);
  View(const View&) = delete;
  View& operator=(const View&) = delete;
  const DLTensor& dl() const { return dl_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  // Moves the view |bytes| further into its memory (a row of a contiguous
  // tensor: the caller keeps it inside the tensor).
  void advance(uint64_t bytes) { dl_.byte_offset += bytes; }

 private:
  void init(const phi::DenseTensor& tensor, bool own_strides);
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DLTensor dl_{};
};

oar::Stream& stream_of(const phi::CustomContext& ctx);

// Runs the OAR operator |op| (interned once per call site by the caller).
void run(const phi::CustomContext& ctx, const oar::OpId& op, std::initializer_list<const View*> in,
         std::initializer_list<const View*> out, std::initializer_list<oar::Attr> attrs = {});

// The same with any number of inputs (concat's variadic list).
void run_n(const phi::CustomContext& ctx, const oar::OpId& op, const std::vector<const View*>& in,
           std::initializer_list<const View*> out, std::initializer_list<oar::Attr> attrs = {});

// Fills |out| (allocated) with |value| rounded to its dtype.
void fill(const phi::CustomContext& ctx, phi::DenseTensor* out, double value);
// A new device tensor of |dims| and |dtype|; contents undefined.
phi::DenseTensor empty(const phi::CustomContext& ctx, const std::vector<int64_t>& dims,
                       phi::DataType dtype);
// A rank-0 device tensor holding |value|, to broadcast against others.
phi::DenseTensor scalar(const phi::CustomContext& ctx, phi::DataType dtype, double value);
std::vector<int64_t> dims_of(const phi::DenseTensor& t);

// Throws Paddle's Unimplemented error naming the OAR device, the Paddle
// kernel and what of its arguments OAR's operator cannot take.
[[noreturn]] void unsupported(const phi::CustomContext& ctx, const char* kernel,
                              const std::string& what);

}  // namespace oar_paddle

// Interns |name| on first use.
#define OAR_PADDLE_OP(name)             \
  ([]() -> const ::oar::OpId& {         \
    static const ::oar::OpId id_{name}; \
    return id_;                         \
  }())

// The dtype sets of docs/ops.md in Paddle's types, and the registration of a
// Paddle kernel for the oar device type over one of them.
#define OAR_PADDLE_FLOATS float, double, phi::float16, phi::bfloat16
#define OAR_PADDLE_NUMBERS OAR_PADDLE_FLOATS, int32_t, int64_t
#define OAR_PADDLE_ALL OAR_PADDLE_NUMBERS, bool
#define OAR_PADDLE_REGISTER(name, fn, ...) \
  PD_REGISTER_PLUGIN_KERNEL(name, oar, ALL_LAYOUT, oar_paddle::fn, __VA_ARGS__) {}
