#include "oar/buffer.hpp"

#include <utility>

#include "core/loader/plugin.h"
#include "oar/device.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar {

Buffer::~Buffer() { release(); }

Buffer::Buffer(Buffer&& other) noexcept
    : device_(std::exchange(other.device_, nullptr)),
      memory_(std::exchange(other.memory_, nullptr)),
      offset_(other.offset_),
      size_(other.size_),
      kind_(other.kind_),
      owner_(other.owner_),
      block_(std::exchange(other.block_, nullptr)),
      imported_(std::exchange(other.imported_, nullptr)) {
  if (device_ != nullptr) retrack(device_, &other);
}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    release();
    device_ = std::exchange(other.device_, nullptr);
    memory_ = std::exchange(other.memory_, nullptr);
    offset_ = other.offset_;
    size_ = other.size_;
    kind_ = other.kind_;
    owner_ = other.owner_;
    block_ = std::exchange(other.block_, nullptr);
    imported_ = std::exchange(other.imported_, nullptr);
    if (device_ != nullptr) retrack(device_, &other);
  }
  return *this;
}

void Buffer::release() noexcept {
  if (device_ == nullptr) return;
  untrack(device_);
  switch (owner_) {
    case Owner::kCached:
      device_->free_block(block_);
      break;
    case Owner::kDevice: {
      oar_status_t code = device_->api().memory_free(device_->handle(), memory_);
      if (code != OAR_STATUS_OK) (void)device_->plugin().status(code, "memory_free");
      break;
    }
    case Owner::kDLPack:
      if (imported_ != nullptr && imported_->deleter != nullptr) imported_->deleter(imported_);
      break;
  }
  device_ = nullptr;
  memory_ = nullptr;
  block_ = nullptr;
  imported_ = nullptr;
}

Device& Buffer::device() const {
  if (device_ == nullptr)
    detail::throw_empty_object("Buffer::device", "buffer", released_by_runtime());
  return *device_;
}

void* Buffer::host_address() const {
  if (!valid()) detail::throw_empty_object("Buffer::host_address", "buffer", released_by_runtime());
  if (kind_ == OAR_MEMORY_KIND_DEVICE || device_->api().memory_host_address == nullptr) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT,
                "host_address: the buffer is device memory; allocate HOST_PINNED or UNIFIED "
                "memory to address it from the host",
                device_->plugin_name());
  }
  void* address = nullptr;
  device_->plugin().check(device_->api().memory_host_address(device_->handle(), memory_, &address),
                          "memory_host_address");
  return static_cast<char*>(address) + offset_;
}

void Buffer::record_stream(Stream& stream) {
  Device& device = this->device();
  if (&stream.device() != &device) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "Buffer::record_stream: the buffer is on " +
                                                 device.name() + ", the stream on " +
                                                 stream.device().name());
  }
  if (owner_ == Owner::kCached) device.record_block_stream(block_, stream);
}

}  // namespace oar
