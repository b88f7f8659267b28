// The adapter's process-wide state, shared by the runtime slots (runtime.cc)
// and the kernels (kernels/*.cc). It holds one oar::Runtime; Paddle's device
// ids 0..n-1 of the device type "oar" are the runtime's visible devices in
// order (OAR_DEVICES selects them, e.g. OAR_DEVICES=sim).
//
// Paddle never sees an OAR object: a C_Stream is a StreamHandle*, a C_Event an
// EventHandle*, and device memory is an address from the AddressSpace.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "address_space.h"
#include "oar/oar.hpp"

namespace oar_paddle {

inline constexpr const char* kDeviceType = "oar";

struct StreamHandle {
  oar::Stream stream;
  int device = 0;
};

struct EventHandle {
  oar::Event event;
  int device = 0;
};

// Host memory an asynchronous upload reads from, kept until |done| completes.
struct Staging {
  std::unique_ptr<unsigned char[]> bytes;
  oar::Event done;
};

class Adapter {
 public:
  // The adapter, created on first use; nullptr if OAR could not start (the
  // reason is logged once). Never destroyed before finalize().
  static Adapter* get();
  // Destroys the adapter (Paddle's finalize slot).
  static void finalize();
  // Stops every slot from touching OAR and destroys the adapter (process
  // exit, see runtime.cc).
  static void shutdown_at_exit();
  // Whether finalize() ran (at exit or from Paddle).
  static bool finalized();

  size_t device_count() const { return devices_.size(); }
  oar::Device& device(int id) const { return *devices_.at(size_t(id)); }
  AddressSpace& addresses() { return addresses_; }

  // Streams Paddle created on |device| (a free must wait for all of them).
  void add_stream(StreamHandle* stream);
  void remove_stream(StreamHandle* stream);
  std::vector<StreamHandle*> streams(int device);

  // Keeps |staging| until its event completes; frees the staging buffers
  // whose events are done.
  void keep_staging(int device, Staging staging);
  void reap_staging(int device, bool wait);

 private:
  Adapter();
  oar::Runtime runtime_;
  std::vector<oar::Device*> devices_;
  AddressSpace addresses_;
  std::mutex mutex_;  // guards streams_ and staging_
  std::vector<std::vector<StreamHandle*>> streams_;
  std::vector<std::vector<Staging>> staging_;
};

// The (buffer, offset) behind a Paddle device pointer, as a DLTensor wants it.
struct DeviceAddress {
  oar_memory_t memory = nullptr;
  uint64_t offset = 0;
  const AddressSpace::Range* range = nullptr;
};

// Resolves |pointer|, which must lie inside a live allocation of the adapter
// (|bytes| more must fit too); throws oar::Error INVALID_ARGUMENT otherwise.
DeviceAddress resolve(const void* pointer, uint64_t bytes);

}  // namespace oar_paddle
