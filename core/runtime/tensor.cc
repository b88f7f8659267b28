#include "oar/tensor.hpp"

#include <string>
#include <utility>

#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/runtime.hpp"
#include "oar/stream.hpp"

namespace oar {
namespace {

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = step;
    step *= shape[i];
  }
  return strides;
}

// The byte span a strided view touches: [0, extent).
uint64_t extent_bytes(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides,
                      DLDataType dtype) {
  int64_t last = 0;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0) return 0;
    if (strides[i] < 0) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT, "negative strides are not supported");
    }
    last += (shape[i] - 1) * strides[i];
  }
  return uint64_t(last + 1) * dtype_size(dtype);
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
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(OAR_STATUS_INVALID_ARGUMENT, "negative dimension in Tensor::empty");
    count *= d;
  }
  auto buffer =
      std::make_shared<Buffer>(device.allocate(uint64_t(count) * dtype_size(dtype), stream));
  return view(std::move(buffer), std::move(shape), dtype);
}

Tensor Tensor::view(std::shared_ptr<Buffer> buffer, std::vector<int64_t> shape, DLDataType dtype,
                    std::vector<int64_t> strides, uint64_t byte_offset) {
  if (buffer == nullptr || !buffer->valid()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "Tensor::view of an empty buffer");
  }
  if (strides.empty()) strides = contiguous_strides(shape);
  if (strides.size() != shape.size()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "Tensor::view: " + std::to_string(strides.size()) +
                                                 " strides for " + std::to_string(shape.size()) +
                                                 " dimensions");
  }
  uint64_t extent = extent_bytes(shape, strides, dtype);
  if (byte_offset > buffer->size() || extent > buffer->size() - byte_offset) {
    throw Error(OAR_STATUS_OUT_OF_RANGE, "Tensor::view needs " + std::to_string(extent) +
                                             " bytes at offset " + std::to_string(byte_offset) +
                                             " of a " + std::to_string(buffer->size()) +
                                             "-byte buffer");
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
  dl_.data = buffer_->memory();
  dl_.device = buffer_->device().dlpack_device();
  dl_.ndim = int(shape_.size());
  dl_.shape = shape_.data();
  dl_.strides = strides_.data();
}

int64_t Tensor::numel() const {
  int64_t count = 1;
  for (int64_t d : shape_) count *= d;
  return count;
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

void Tensor::copy_from_host(Stream& stream, const void* src) const {
  if (!is_contiguous()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "copy_from_host needs a contiguous tensor");
  }
  stream.copy_from_host(*buffer_, dl_.byte_offset - buffer_->offset(), src, nbytes());
}

void Tensor::copy_to_host(Stream& stream, void* dst) const {
  if (!is_contiguous()) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "copy_to_host needs a contiguous tensor");
  }
  stream.copy_to_host(dst, *buffer_, dl_.byte_offset - buffer_->offset(), nbytes());
}

DLManagedTensor* Tensor::to_dlpack() const {
  if (!defined()) throw Error(OAR_STATUS_INVALID_ARGUMENT, "to_dlpack of an undefined tensor");
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
  if (dl.dtype.lanes != 1 || dl.dtype.bits % 8 != 0) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "from_dlpack: unsupported dtype " + dtype_name(dl.dtype));
  }
  std::vector<int64_t> shape(dl.shape, dl.shape + dl.ndim);
  std::vector<int64_t> strides = dl.strides != nullptr
                                     ? std::vector<int64_t>(dl.strides, dl.strides + dl.ndim)
                                     : contiguous_strides(shape);
  uint64_t extent = extent_bytes(shape, strides, dl.dtype);

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
