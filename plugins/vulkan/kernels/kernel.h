// What every vulkan kernel is built from: tensors as (buffer, element offset,
// shape, strides), checked against their allocation on the calling thread;
// the operator's schema and attributes; and dispatch() of one of the
// embedded shaders with its parameter words. Kernels validate and compute
// parameters on the host, so a bad call fails at once with a message.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "oar/ops.hpp"
#include "vulkan.h"

namespace oar::vulkan {

struct TensorRef {
  oar_memory_s* memory = nullptr;
  DLDataType dtype{};
  int64_t offset = 0;  // in elements
  int ndim = 0;
  int64_t shape[ops::kMaxDims] = {};
  int64_t strides[ops::kMaxDims] = {};

  VkBuffer buffer() const { return memory->buffer.buffer; }
  int64_t numel() const;
  // Row-major strides of the shape.
  std::vector<int64_t> contiguous_strides() const;
};

// The tensors of a call: held inline up to kInline (no heap allocation per
// operation for the common operators), on the heap beyond.
class TensorRefs {
 public:
  static constexpr size_t kInline = 4;
  void reserve(size_t n) {
    if (n > kInline) heap_.reserve(n);
  }
  void push_back(const TensorRef& ref) {
    if (size_ < kInline && heap_.empty()) {
      inline_[size_] = ref;
    } else {
      if (heap_.empty()) heap_.assign(inline_, inline_ + size_);
      heap_.push_back(ref);
    }
    ++size_;
  }
  size_t size() const { return size_; }
  const TensorRef* begin() const { return heap_.empty() ? inline_ : heap_.data(); }
  const TensorRef* end() const { return begin() + size_; }
  const TensorRef& operator[](size_t i) const { return begin()[i]; }

 private:
  TensorRef inline_[kInline];
  std::vector<TensorRef> heap_;
  size_t size_ = 0;
};

struct KernelContext {
  const oar_kernel_call_t* call;
  oar_stream_s* stream;
  const ops::OpSchema& schema;
  ops::Attrs attrs;
  TensorRefs inputs;
  TensorRefs outputs;
};

using KernelBody = void (*)(KernelContext& context);

// The dtype number the shaders use: 1 f16, 2 bf16, 3 f32, 4 i32, 5 i64, 6 bool,
// 7 i8, 8 u8, 9 i16.
int shader_dtype(DLDataType t);
// "name_a_b..." from a base name and dtypes.
std::string module_name(const char* base, std::initializer_list<DLDataType> dtypes);

// The dtypes of the operator set this plugin has shaders for (f64 excluded).
constexpr uint32_t kSupported =
    ops::kF16 | ops::kBF16 | ops::kF32 | ops::kI32 | ops::kI64 | ops::kBool | ops::kSmallInts;

void register_op(const oar::sdk::KernelRegistrar& registrar, const char* op, KernelBody body,
                 const std::vector<std::vector<DLDataType>>& signatures, uint32_t flags = 0);
std::vector<std::vector<DLDataType>> same_signatures(uint32_t bits, size_t inputs, size_t outputs);

// |axis| made non-negative for |rank| (rank 0 accepts 0).
int normalize_axis(int64_t axis, int rank);

// Parameter words as the shaders read them (int32: every element index of a
// buffer of at most maxStorageBufferRange bytes fits).
class Params {
 public:
  Params() { words_.reserve(64); }  // map.comp's 47 words: one allocation
  void add(int64_t value) { words_.push_back(int32_t(value)); }
  void add_float(float value);
  // |values| padded with |pad| to 8 entries.
  void add8(const int64_t* values, int count, int64_t pad);
  const int32_t* data() const { return words_.data(); }
  uint32_t size() const { return uint32_t(words_.size()); }

 private:
  std::vector<int32_t> words_;
};

void register_elementwise_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_layout_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_reduction_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_nn_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_grad_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_nn_grad_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_optimizer_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_layout_v2_kernels(const oar::sdk::KernelRegistrar& registrar);
void register_math_v2_kernels(const oar::sdk::KernelRegistrar& registrar);

// A strided elementwise pass (shaders/map.comp) over |shape|: operands are
// (tensor, element offset, strides over |shape|); unused ones may be null.
struct Operand {
  // At most ops::kMaxDims strides, held inline (no heap allocation per op).
  struct Strides {
    int64_t values[ops::kMaxDims] = {};
    size_t count = 0;
    void assign(size_t n, int64_t value) {
      count = n;
      for (size_t i = 0; i < n; ++i) values[i] = value;
    }
    void assign(const int64_t* first, const int64_t* last) {
      count = size_t(last - first);
      for (size_t i = 0; i < count; ++i) values[i] = first[i];
    }
    int64_t& operator[](size_t i) { return values[i]; }
    const int64_t* data() const { return values; }
    size_t size() const { return count; }
  };
  const TensorRef* tensor = nullptr;
  int64_t offset = 0;
  Strides strides;
};
// |t| seen through |shape| with NumPy broadcasting (size-1 dims get stride 0).
Operand broadcast(const TensorRef& t, const std::vector<int64_t>& shape);
// |t| as it is (shape equal to the iteration space).
Operand as_is(const TensorRef& t);
void map(oar_stream_s* stream, int op, const std::vector<int64_t>& shape, const Operand& a,
         const Operand& b, const Operand& c, const Operand& y, int32_t scalar0 = 0,
         int32_t scalar1 = 0);
// One reduction for shaders/reduce.comp: x's kept and reduced dimensions
// with their strides. op: 0 sum, 1 mean (sum / divisor), 2 max, 3 min, 4
// prod, 5 argmax, 6 argmin.
struct Reduction {
  int op = 0;
  VkBuffer x = VK_NULL_HANDLE;
  DLDataType x_dtype{};
  int64_t x_offset = 0;
  std::vector<int64_t> kept_shape, kept_strides, reduced_shape, reduced_strides;
  int64_t count = 0;
  double divisor = 1;
  VkBuffer y = VK_NULL_HANDLE;
  DLDataType y_dtype{};
  int64_t y_offset = 0;
  VkBuffer indices = VK_NULL_HANDLE;  // arg reductions over partial results
  int64_t indices_offset = 0;
};
// Records |r|, in several passes through scratch memory when it is long.
void reduce_dispatch(KernelContext& c, const Reduction& r);

// Throws UNIMPLEMENTED if a dispatch over |items| invocations looping
// |iterations| times each would exceed what one invocation may loop on this
// driver (llvmpipe stops long loops silently), naming |what|.
void require_loop_budget(const KernelContext& c, uint64_t items, uint64_t iterations,
                         const char* what);

// The map.comp operation codes (see the shader).
enum MapOp : int {
  kMapCopy = 0,
  kMapCast = 1,
  kMapFill = 2,
  kMapWhere = 3,
};

}  // namespace oar::vulkan
