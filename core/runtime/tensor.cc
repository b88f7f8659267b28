#include "oar/tensor.hpp"

#include <memory>
#include <string>
#include <utility>

#include "core/util/checked_math.h"
#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/ops.hpp"
#include "oar/runtime.hpp"
#include "oar/stream.hpp"

namespace oar {
namespace {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  util::row_major_strides(shape.data(), int(shape.size()), strides.data());
  return strides;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

// Checks what every tensor must satisfy whatever its storage: a whole-byte
// dtype, no negative dimension, and an element count whose byte size fits in
// int64_t (so numel() and nbytes() never wrap).
void check_shape(const char* operation, const std::vector<int64_t>& shape, DLDataType dtype) {
  if (dtype.bits == 0 || dtype.bits % 8 != 0 || dtype.lanes == 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(operation) + ": dtype " +
                                                 dtype_name(dtype) +
                                                 " is not a whole number of bytes per element");
  }
  for (int64_t d : shape) {
    if (d < 0) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT,
                  std::string(operation) + ": negative dimension in shape " + shape_text(shape));
    }
  }
  int64_t count = 0;
  int64_t extents = 0;
  int64_t bytes = 0;
  if (!util::element_count(shape.data(), int(shape.size()), &count, &extents) ||
      !util::checked_mul(extents, int64_t(dtype_size(dtype)), &bytes)) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(operation) + ": shape " +
                                                 shape_text(shape) + " of " + dtype_name(dtype) +
                                                 " overflows 64-bit sizes");
  }
}

// The byte span a strided view touches: [0, extent). Throws OUT_OF_RANGE when
// it leaves 64-bit sizes (such a view fits no buffer).
uint64_t extent_bytes(const char* operation, const std::vector<int64_t>& shape,
                      const std::vector<int64_t>& strides, DLDataType dtype) {
  for (int64_t stride : strides) {
    if (stride < 0) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT,
                  std::string(operation) + ": negative strides are not supported");
    }
  }
  util::Span span;
  uint64_t bytes = 0;
  uint64_t before = 0;
  if (!util::element_span(shape.data(), strides.data(), int(shape.size()), &span) ||
      !util::span_bytes(span, dtype_size(dtype), &bytes, &before)) {
    throw Error(OAR_STATUS_OUT_OF_RANGE, std::string(operation) + ": shape " + shape_text(shape) +
                                             " with strides " + shape_text(strides) +
                                             " reaches beyond 64-bit sizes");
  }
  return bytes;
}

// Keeps a tensor's buffer alive for as long as a DLPack consumer holds it.
struct ExportContext {
  std::shared_ptr<Buffer> buffer;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
};

void delete_export(DLManagedTensor* self) {
  delete static_cast<ExportContext*>(self->manager_ctx);
  delete self;
}

}  // namespace

Tensor::Tensor(const Tensor& other)
    : buffer_(other.buffer_), shape_(other.shape_), strides_(other.strides_), dl_(other.dl_) {
  if (buffer_ != nullptr) refresh();
}

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) {
    buffer_ = other.buffer_;
    shape_ = other.shape_;
    strides_ = other.strides_;
    dl_ = other.dl_;
    if (buffer_ != nullptr) refresh();
  }
  return *this;
}

Tensor Tensor::empty(Device& device, std::vector<int64_t> shape, DLDataType dtype, Stream* stream) {
  check_shape("Tensor::empty", shape, dtype);
  int64_t count = 0;
  util::element_count(shape.data(), int(shape.size()), &count);
  auto buffer =
      std::make_shared<Buffer>(device.allocate(uint64_t(count) * dtype_size(dtype), stream));
  return view(std::move(buffer), std::move(shape), dtype);
}

Tensor Tensor::from_host(Stream& stream, const void* data, std::vector<int64_t> shape,
                         DLDataType dtype) {
  Tensor t = empty(stream.device(), std::move(shape), dtype, &stream);
  const uint64_t size = t.nbytes();
  if (size == 0) return t;
  if (data == nullptr) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "Tensor::from_host: NULL data for " + std::to_string(size) + " bytes");
  }
  // The upload is asynchronous: it reads OAR's own copy, which the stream
  // releases once it has passed the upload (or, without host callbacks, the
  // upload is waited for).
  auto copy = std::make_shared<std::vector<unsigned char>>(
      static_cast<const unsigned char*>(data), static_cast<const unsigned char*>(data) + size);
  t.copy_from_host(stream, copy->data());
  bool released_later = false;
  if (stream.device().has_feature(OAR_DEVICE_FEATURE_HOST_CALLBACKS)) {
    try {
      stream.add_callback([copy](oar_status_t) {});
      released_later = true;
    } catch (const Error&) {
      // Waiting below is just as safe.
    }
  }
  if (!released_later) stream.synchronize();
  return t;
}

Tensor Tensor::view(std::shared_ptr<Buffer> buffer, std::vector<int64_t> shape, DLDataType dtype,
                    std::vector<int64_t> strides, uint64_t byte_offset) {
  if (buffer == nullptr) throw Error(OAR_STATUS_INVALID_ARGUMENT, "Tensor::view of no buffer");
  if (!buffer->valid()) {
    detail::throw_empty_object("Tensor::view", "buffer", buffer->released_by_runtime());
  }
  check_shape("Tensor::view", shape, dtype);
  if (strides.empty()) strides = contiguous_strides(shape);
  if (strides.size() != shape.size()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "Tensor::view: " + std::to_string(strides.size()) +
                                                 " strides for " + std::to_string(shape.size()) +
                                                 " dimensions");
  }
  uint64_t extent = extent_bytes("Tensor::view", shape, strides, dtype);
  if (byte_offset > buffer->size() || extent > buffer->size() - byte_offset) {
    throw Error(OAR_STATUS_OUT_OF_RANGE, "Tensor::view needs " + std::to_string(extent) +
                                             " bytes at offset " + std::to_string(byte_offset) +
                                             " of a " + std::to_string(buffer->size()) +
                                             "-byte buffer");
  }
  // Elements must be naturally aligned: kernels load them as typed values,
  // and a GPU faults on a misaligned one.
  if ((buffer->offset() + byte_offset) % dtype_size(dtype) != 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "Tensor::view: byte offset " + std::to_string(buffer->offset() + byte_offset) +
                    " is not a multiple of the " + std::to_string(dtype_size(dtype)) +
                    "-byte element size of " + dtype_name(dtype));
  }
  Tensor tensor;
  tensor.buffer_ = std::move(buffer);
  tensor.shape_ = std::move(shape);
  tensor.strides_ = std::move(strides);
  tensor.dl_.dtype = dtype;
  tensor.dl_.byte_offset = tensor.buffer_->offset() + byte_offset;
  tensor.refresh();
  return tensor;
}

void Tensor::refresh() {
  // A tensor whose buffer its runtime released keeps describing itself (it
  // can be copied, and its shape read); dl() refuses to hand it out.
  if (buffer_->valid()) {
    dl_.data = buffer_->memory();
    dl_.device = buffer_->device().dlpack_device();
  }
  dl_.ndim = int(shape_.size());
  dl_.shape = shape_.data();
  dl_.strides = strides_.data();
}

int64_t Tensor::numel() const {
  int64_t count = 0;
  util::element_count(shape_.data(), int(shape_.size()), &count);  // checked when made
  return count;
}

const Buffer& Tensor::live_buffer(const char* operation) const {
  if (buffer_ == nullptr) {
    throw Error(OAR_STATUS_FAILED_PRECONDITION,
                std::string(operation) +
                    ": the tensor is undefined (default-constructed or moved "
                    "from)");
  }
  if (!buffer_->valid()) {
    detail::throw_empty_object(operation, "tensor's buffer", buffer_->released_by_runtime());
  }
  return *buffer_;
}

Device& Tensor::device() const { return live_buffer("Tensor::device").device(); }

const DLTensor& Tensor::dl() const {
  live_buffer("Tensor::dl");
  return dl_;
}

bool Tensor::is_contiguous() const {
  return strides_ == contiguous_strides(shape_) || numel() <= 1;
}

Tensor Tensor::transpose(int a, int b) const {
  int n = ndim();
  if (a < 0) a += n;
  if (b < 0) b += n;
  if (a < 0 || b < 0 || a >= n || b >= n) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "transpose: dimension out of range for a " + std::to_string(n) + "-d tensor");
  }
  Tensor result = *this;
  std::swap(result.shape_[a], result.shape_[b]);
  std::swap(result.strides_[a], result.strides_[b]);
  result.refresh();
  return result;
}

uint64_t Tensor::byte_offset() const {
  return buffer_ == nullptr ? 0 : dl_.byte_offset - buffer_->offset();
}

int64_t Tensor::element_offset() const {
  return buffer_ == nullptr ? 0 : int64_t(byte_offset() / dtype_size(dl_.dtype));
}

std::vector<int64_t> Tensor::resolve_shape(const char* operation,
                                           std::vector<int64_t> shape) const {
  auto refuse = [&](const std::string& why) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, std::string(operation) + ": cannot give a tensor of " +
                                                 shape_text(shape_) + " the shape " +
                                                 shape_text(shape) + ": " + why);
  };
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (inferred >= 0) refuse("only one dimension may be -1");
      inferred = int(i);
      continue;
    }
    if (shape[i] < 0) refuse("a dimension is negative");
    if (!util::checked_mul(known, shape[i], &known)) refuse("it overflows 64-bit sizes");
  }
  const int64_t count = numel();
  if (inferred >= 0) {
    // With a zero among the others, -1 could be anything.
    if (known == 0) refuse("the -1 dimension is ambiguous beside a 0");
    if (count % known != 0) {
      refuse(std::to_string(count) + " elements do not divide into rows of " +
             std::to_string(known));
    }
    shape[size_t(inferred)] = count / known;
  } else if (known != count) {
    refuse("it has " + std::to_string(known) + " elements, not " + std::to_string(count));
  }
  check_shape(operation, shape, dl_.dtype);  // a zero beside huge dimensions
  return shape;
}

// Walks the old dimensions from the last, in chunks whose elements are
// equally spaced (stride[i] == stride[i + 1] * shape[i + 1]); each chunk must
// be split or merged into whole new dimensions, which take strides inside it.
bool Tensor::view_strides(const std::vector<int64_t>& shape, std::vector<int64_t>* out) const {
  std::vector<int64_t>& strides = *out;
  strides.assign(shape.size(), 0);
  if (numel() <= 1) {
    // No stride is ever followed between two elements.
    strides = contiguous_strides(shape);
    return true;
  }
  int view_d = int(shape.size()) - 1;
  int64_t chunk_stride = strides_.back();
  int64_t tensor_count = 1;
  int64_t view_count = 1;
  for (int d = int(shape_.size()) - 1; d >= 0; --d) {
    tensor_count *= shape_[size_t(d)];
    int64_t next = 0;
    const bool chunk_ends = d == 0 || (shape_[size_t(d) - 1] != 1 &&
                                       (!util::checked_mul(tensor_count, chunk_stride, &next) ||
                                        strides_[size_t(d) - 1] != next));
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_count < tensor_count || shape[size_t(view_d)] == 1)) {
      if (!util::checked_mul(view_count, chunk_stride, &strides[size_t(view_d)])) return false;
      view_count *= shape[size_t(view_d)];
      --view_d;
    }
    if (view_count != tensor_count) return false;
    if (d > 0) {
      chunk_stride = strides_[size_t(d) - 1];
      tensor_count = 1;
      view_count = 1;
    }
  }
  return view_d == -1;
}

Tensor Tensor::view(std::vector<int64_t> shape) const {
  live_buffer("Tensor::view");
  shape = resolve_shape("Tensor::view", std::move(shape));
  std::vector<int64_t> strides;
  if (!view_strides(shape, &strides)) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "Tensor::view: the strides " + shape_text(strides_) + " of a " +
                    shape_text(shape_) + " tensor cannot express the shape " + shape_text(shape) +
                    " without a copy (use reshape)");
  }
  return view(buffer_, std::move(shape), dl_.dtype, std::move(strides), byte_offset());
}

Tensor Tensor::reshape(std::vector<int64_t> shape, Stream* stream) const {
  const Buffer& buffer = live_buffer("Tensor::reshape");
  shape = resolve_shape("Tensor::reshape", std::move(shape));
  std::vector<int64_t> strides;
  if (view_strides(shape, &strides)) {
    return view(buffer_, std::move(shape), dl_.dtype, std::move(strides), byte_offset());
  }
  Stream& on = stream != nullptr ? *stream : buffer.device().default_stream();
  Tensor copy = ops::contiguous(on, *this);
  return view(copy.buffer_, std::move(shape), dl_.dtype, {}, copy.byte_offset());
}

void Tensor::copy_from_host(Stream& stream, const void* src) const {
  const Buffer& buffer = live_buffer("Tensor::copy_from_host");
  if (!is_contiguous()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "copy_from_host needs a contiguous tensor");
  }
  stream.copy_from_host(buffer, byte_offset(), src, nbytes());
}

void Tensor::copy_to_host(Stream& stream, void* dst) const {
  const Buffer& buffer = live_buffer("Tensor::copy_to_host");
  if (!is_contiguous()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "copy_to_host needs a contiguous tensor");
  }
  stream.copy_to_host(dst, buffer, byte_offset(), nbytes());
}

DLManagedTensor* Tensor::to_dlpack() const {
  live_buffer("Tensor::to_dlpack");
  auto context = std::make_unique<ExportContext>();
  context->buffer = buffer_;
  context->shape = shape_;
  context->strides = strides_;
  auto managed = std::make_unique<DLManagedTensor>();
  managed->dl_tensor = dl_;
  managed->dl_tensor.shape = context->shape.data();
  managed->dl_tensor.strides = context->strides.data();
  managed->manager_ctx = context.release();
  managed->deleter = &delete_export;
  return managed.release();
}

Tensor Tensor::from_dlpack(const Runtime& runtime, DLManagedTensor* managed) {
  if (managed == nullptr) throw Error(OAR_STATUS_INVALID_ARGUMENT, "from_dlpack(nullptr)");
  // Until the buffer owns |managed|, a failure must still hand it back.
  struct Guard {
    DLManagedTensor* managed;
    ~Guard() {
      if (managed != nullptr && managed->deleter != nullptr) managed->deleter(managed);
    }
  } guard{managed};

  const DLTensor& dl = managed->dl_tensor;
  Device* device = nullptr;
  for (Device* candidate : runtime.devices()) {
    DLDevice d = candidate->dlpack_device();
    if (d.device_type == dl.device.device_type && d.device_id == dl.device.device_id) {
      device = candidate;
      break;
    }
  }
  if (device == nullptr) {
    throw Error(OAR_STATUS_NOT_FOUND, "from_dlpack: no OAR device has DLPack device (" +
                                          std::to_string(int(dl.device.device_type)) + ", " +
                                          std::to_string(dl.device.device_id) + ")");
  }
  // Everything the producer wrote is checked before any of it is used.
  if (dl.dtype.lanes != 1 || dl.dtype.bits == 0 || dl.dtype.bits % 8 != 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "from_dlpack: unsupported dtype " + dtype_name(dl.dtype));
  }
  if (dl.ndim < 0 || dl.ndim > kMaxDlpackDims) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "from_dlpack: ndim " + std::to_string(dl.ndim) +
                                                 " is outside [0, " +
                                                 std::to_string(kMaxDlpackDims) + "]");
  }
  if (dl.ndim > 0 && dl.shape == nullptr) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "from_dlpack: shape is NULL for a tensor of " +
                                                 std::to_string(dl.ndim) + " dimensions");
  }
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  check_shape("from_dlpack", shape, dl.dtype);
  std::vector<int64_t> strides = dl.strides != nullptr
                                     ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim)
                                     : contiguous_strides(shape);
  uint64_t extent = extent_bytes("from_dlpack", shape, strides, dl.dtype);
  if (dl.byte_offset > UINT64_MAX - extent) {
    throw Error(OAR_STATUS_OUT_OF_RANGE, "from_dlpack: byte_offset " +
                                             std::to_string(dl.byte_offset) + " plus " +
                                             std::to_string(extent) + " bytes overflows");
  }
  if (dl.byte_offset % dtype_size(dl.dtype) != 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "from_dlpack: byte_offset " + std::to_string(dl.byte_offset) +
                    " is not a multiple of the " + std::to_string(dtype_size(dl.dtype)) +
                    "-byte element size (elements must be naturally aligned)");
  }
  if (dl.data == nullptr && extent != 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "from_dlpack: data is NULL for a non-empty tensor");
  }

  Buffer buffer;
  buffer.device_ = device;
  buffer.memory_ = static_cast<oar_memory_t>(dl.data);
  buffer.offset_ = dl.byte_offset;
  buffer.size_ = extent;
  buffer.kind_ = OAR_MEMORY_KIND_DEVICE;
  buffer.owner_ = Buffer::Owner::kDLPack;
  buffer.imported_ = managed;
  buffer.track(device);
  guard.managed = nullptr;
  return view(std::make_shared<Buffer>(std::move(buffer)), std::move(shape), dl.dtype,
              std::move(strides), 0);
}

}  // namespace oar
