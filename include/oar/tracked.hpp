// Objects that hold a plugin handle of a device (streams, events, buffers). The
// device keeps a list of them so that closing it releases what the framework
// forgot, in the order the ABI demands, and leaves the C++ objects empty
// instead of dangling.
#pragma once

namespace oar {

class Device;

namespace detail {

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

 private:
  friend class ::oar::Device;
  // An intrusive list, so tracking never allocates.
  Tracked* prev_ = nullptr;
  Tracked* next_ = nullptr;
};

}  // namespace detail
}  // namespace oar
