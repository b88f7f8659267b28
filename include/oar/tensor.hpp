// oar::Tensor: a typed, shaped view of a buffer, described as a DLTensor whose
// |data| is the buffer's allocation handle and |byte_offset| its offset. Views
// (transpose, ...) share the buffer. Tensors cross library borders through
// DLPack.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dlpack/dlpack.h"
#include "oar/buffer.hpp"
#include "oar/dtype.hpp"

namespace oar {

class Device;
class Runtime;
class Stream;

class Tensor {
 public:
  Tensor() = default;
  // Copies share the buffer; the descriptor is re-pointed at the copy's own
  // shape and strides.
  Tensor(const Tensor& other);
  Tensor& operator=(const Tensor& other);
  Tensor(Tensor&& other) noexcept = default;  // vectors keep their storage
  Tensor& operator=(Tensor&& other) noexcept = default;

  // A new contiguous tensor from |device|'s caching allocator, ordered on
  // |stream| (the default stream when null). Contents are undefined.
  static Tensor empty(Device& device, std::vector<int64_t> shape, DLDataType dtype,
                      Stream* stream = nullptr);
  // A new contiguous tensor holding a copy of nbytes() of host memory at
  // |data|, on |stream|'s device and ordered on it. The caller's buffer may
  // be freed or changed as soon as this returns: OAR copies it first and keeps
  // that copy until the stream has passed the upload.
  static Tensor from_host(Stream& stream, const void* data, std::vector<int64_t> shape,
                          DLDataType dtype);
  // A view of |buffer| starting |byte_offset| bytes into it; strides in
  // elements, empty for contiguous. Throws OUT_OF_RANGE if it does not fit.
  static Tensor view(std::shared_ptr<Buffer> buffer, std::vector<int64_t> shape, DLDataType dtype,
                     std::vector<int64_t> strides = {}, uint64_t byte_offset = 0);

  // What an import accepts: DLPack itself sets no limit.
  static constexpr int kMaxDlpackDims = 64;

  // Reading what a tensor is (shape, strides, dtype, numel, ...), copying,
  // moving and destroying it always work. What reaches its device or memory
  // (dl, device, copies, to_dlpack) throws oar::Error FAILED_PRECONDITION for
  // an undefined tensor or one whose runtime was destroyed.
  bool defined() const { return buffer_ != nullptr; }
  const DLTensor& dl() const;
  Device& device() const;
  const std::shared_ptr<Buffer>& buffer() const { return buffer_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  const std::vector<int64_t>& strides() const { return strides_; }
  DLDataType dtype() const { return dl_.dtype; }
  int ndim() const { return dl_.ndim; }
  int64_t numel() const;
  uint64_t nbytes() const { return uint64_t(numel()) * dtype_size(dl_.dtype); }
  bool is_contiguous() const;

  // Where element 0 lies in buffer(): dl().byte_offset counts from the start
  // of the allocation, these from the start of the buffer (what
  // Tensor::view(buffer(), ..., byte_offset()) and copies take). 0 for an
  // undefined tensor; readable after the runtime is gone.
  uint64_t byte_offset() const;
  int64_t element_offset() const;

  // A view with dimensions |a| and |b| swapped (not contiguous in general).
  Tensor transpose(int a, int b) const;

  // The same elements, in row-major order, with |shape|; one dimension may be
  // -1 and is then inferred from numel(). view() never copies: it shares the
  // buffer (byte_offset() included) and throws INVALID_ARGUMENT when the
  // strides cannot express |shape| (a transposed tensor flattened, say).
  // reshape() returns the same view where one exists and otherwise a
  // contiguous copy made by the copy operator on |stream| (the device's
  // default stream when null), then viewed. A shape whose element count
  // differs, or that overflows 64-bit sizes, is INVALID_ARGUMENT; both throw
  // FAILED_PRECONDITION for an undefined tensor or a destroyed runtime.
  Tensor view(std::vector<int64_t> shape) const;
  Tensor reshape(std::vector<int64_t> shape, Stream* stream = nullptr) const;

  // Copies between a host array of nbytes() and this tensor, which must be
  // contiguous; ordered on |stream|.
  void copy_from_host(Stream& stream, const void* src) const;
  void copy_to_host(Stream& stream, void* dst) const;

  // Exports to DLPack: the consumer owns the result and calls its deleter,
  // which keeps the buffer alive until then.
  DLManagedTensor* to_dlpack() const;
  // Imports a DLPack tensor of one of |runtime|'s devices (matched by DLPack
  // device type and the plugin's device index); takes ownership of |managed|
  // and calls its deleter when the last view dies.
  // Every field is checked first (dtype, ndim in [0, kMaxDlpackDims], shape,
  // strides, offsets, sizes that fit in 64 bits): a malformed tensor is an
  // oar::Error, and is handed back to its deleter all the same.
  static Tensor from_dlpack(const Runtime& runtime, DLManagedTensor* managed);

 private:
  void refresh();
  // |shape| with -1 resolved, checked against numel().
  std::vector<int64_t> resolve_shape(const char* operation, std::vector<int64_t> shape) const;
  // The strides that give |shape| over this tensor's elements without a copy,
  // or false.
  bool view_strides(const std::vector<int64_t>& shape, std::vector<int64_t>* out) const;
  const Buffer& live_buffer(const char* operation) const;

  std::shared_ptr<Buffer> buffer_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;
  DLTensor dl_{};
};

}  // namespace oar
