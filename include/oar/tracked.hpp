// Objects that hold a plugin handle of a device (streams, events, buffers). The
// device keeps a list of them so that closing it releases what the framework
// forgot, in the order the ABI demands, and leaves the C++ objects empty
// instead of dangling. Every call that needs the device on an empty object
// (default-constructed, moved from, or released with its runtime) throws
// oar::Error FAILED_PRECONDITION saying which of these it is.
#pragma once

namespace oar {

class Device;

namespace detail {

// Throws oar::Error FAILED_PRECONDITION for |operation| ("Stream::synchronize")
// on an empty |object| ("stream"); |released_by_runtime| says whether its
// runtime emptied it.
[[noreturn]] void throw_empty_object(const char* operation, const char* object,
                                     bool released_by_runtime);

class Tracked {
 public:
  // Releases the plugin handle now; the object becomes empty.
  virtual void release() noexcept = 0;
  // A short description for leak reports ("stream", "buffer of 4096 bytes").
  virtual const char* what() const noexcept = 0;

 protected:
  Tracked() = default;
  ~Tracked() = default;
  void track(Device* device) noexcept;
  void untrack(Device* device) noexcept;
  void retrack(Device* device, Tracked* previous) noexcept;
  // Whether the runtime released this object as it closed the device.
  bool released_by_runtime() const noexcept { return released_by_runtime_; }

 private:
  friend class ::oar::Device;
  // An intrusive list, so tracking never allocates.
  Tracked* prev_ = nullptr;
  Tracked* next_ = nullptr;
  bool released_by_runtime_ = false;
};

// A tracked owner of one plugin handle of a device (a stream, an event):
// moves keep the tracking, release() untracks and calls Derived::destroy.
template <typename Derived, typename Handle>
class DeviceHandle : protected Tracked {
 public:
  bool valid() const { return handle_ != nullptr; }
  Handle handle() const { return handle_; }
  // Throws FAILED_PRECONDITION when the object is empty.
  Device& device() const { return live("device"); }

 protected:
  DeviceHandle() = default;
  DeviceHandle(Device* device, Handle handle) : device_(device), handle_(handle) { track(device_); }
  ~DeviceHandle() = default;  // Derived's destructor calls release()
  DeviceHandle(DeviceHandle&& other) noexcept : device_(other.device_), handle_(other.handle_) {
    other.device_ = nullptr;
    other.handle_ = nullptr;
    if (device_ != nullptr) retrack(device_, &other);
  }
  DeviceHandle& operator=(DeviceHandle&& other) noexcept {
    if (this != &other) {
      release();
      device_ = other.device_;
      handle_ = other.handle_;
      other.device_ = nullptr;
      other.handle_ = nullptr;
      if (device_ != nullptr) retrack(device_, &other);
    }
    return *this;
  }

  // The device of a non-empty object; throws FAILED_PRECONDITION naming
  // |operation| otherwise.
  Device& live(const char* operation) const {
    if (device_ == nullptr) {
      throw_empty_object(operation, static_cast<const Derived*>(this)->what(),
                         released_by_runtime());
    }
    return *device_;
  }

  void release() noexcept override {
    if (device_ == nullptr) return;
    untrack(device_);
    static_cast<Derived*>(this)->destroy(*device_, handle_);
    device_ = nullptr;
    handle_ = nullptr;
  }

  Device* device_ = nullptr;
  Handle handle_ = nullptr;
};

}  // namespace detail
}  // namespace oar
