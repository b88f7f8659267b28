// The adapter's process-wide state, shared by the runtime slots (runtime.cc),
// the collectives (xccl.cc) and the kernels (kernels/*.cc). It holds one
// oar::Runtime; Paddle's device ids 0..n-1 of the device type "oar" are the
// runtime's visible devices in order (OAR_DEVICES selects them, e.g.
// OAR_DEVICES=sim).
//
// Paddle never sees an OAR object: a C_Stream is a StreamHandle*, a C_Event an
// EventHandle*, and device memory is an address from the AddressSpace.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "address_space.h"
#include "oar/oar.hpp"
#include "paddle/phi/backends/device_ext.h"
#if defined(OAR_PADDLE_XCCL)
#include "oar/communicator.hpp"
#endif

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

#if defined(OAR_PADDLE_XCCL)
// A C_CCLComm: one rank of an OAR communicator on the adapter's |device|.
struct CommHandle {
  oar::Communicator comm;
  int device = 0;
  // xccl_get_comm_name: the same on every rank of the communicator.
  std::string name;
};
#endif

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

  // Host memory (host_memory_allocate): an OAR HOST_PINNED buffer where the
  // device offers one, else plain host memory (|buffer| empty). Returns the
  // host address.
  void* add_host(std::unique_ptr<oar::Buffer> buffer, void* address);
  // Frees host memory add_host gave; false for an unknown address.
  bool free_host(void* address);
  // 2: |address| is an OAR pinned buffer add_host holds, 1: plain host
  // memory it holds, 0: unknown (for the tests).
  int host_kind(const void* address);
  // Unified memory (unified_memory_allocate, devices offering
  // OAR_MEMORY_KIND_UNIFIED): the host address is also what kernels get, so
  // it resolves like device memory (resolve() looks here after the
  // reserved range).
  void* add_unified(std::unique_ptr<oar::Buffer> buffer, uint64_t size, int device);
  std::unique_ptr<oar::Buffer> remove_unified(void* address);
  const AddressSpace::Range* find_unified(const void* address);

#if defined(OAR_PADDLE_XCCL)
  // Communicators Paddle made (xccl_comm_init_rank). The adapter owns them,
  // so that they die before the runtime (OAR's rule) even when Paddle
  // destroys its own comm objects after the adapter shut down.
  CommHandle* add_comm(std::unique_ptr<CommHandle> comm);
  // Gives |comm| back to the caller to destroy; nullptr when unknown.
  std::unique_ptr<CommHandle> remove_comm(CommHandle* comm);
  // Throws the first error of a communicator on |device| (a failed MPI step
  // is the communicator's, not the stream's). Cheap when there is none.
  void check_comms(int device);
#endif

 private:
  Adapter();
  oar::Runtime runtime_;
  std::vector<oar::Device*> devices_;
  AddressSpace addresses_;
  std::mutex mutex_;  // guards streams_ and staging_
  std::vector<std::vector<StreamHandle*>> streams_;
  std::vector<std::vector<Staging>> staging_;
  std::map<uintptr_t, std::unique_ptr<oar::Buffer>> host_;             // guarded by mutex_
  std::map<uintptr_t, std::unique_ptr<AddressSpace::Range>> unified_;  // guarded by mutex_
#if defined(OAR_PADDLE_XCCL)
  // Last, so destroyed first: a communicator waits for its pending
  // operations, which read the buffers above, and must die before runtime_.
  std::atomic<int> comm_count_{0};
  std::vector<std::unique_ptr<CommHandle>> comms_;  // guarded by mutex_
#endif
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

// ---------------------------------------------------------------- slots
// What every C_DeviceInterface slot shares (runtime.cc defines them).

// Prints a slot's error: Paddle's C_Status carries no text.
void log_error(const char* slot, const char* what);
// Whether the process is exiting: the slots then leave OAR alone.
bool exiting();
// The calling thread's device (Paddle's set_device).
int current_device();

// Runs |body|, turning exceptions into a C_Status with a message.
template <typename F>
C_Status guarded(const char* slot, F&& body) {
  if (exiting()) return C_SUCCESS;
  try {
    return body();
  } catch (const oar::Error& e) {
    log_error(slot, e.what());
    return e.code() == OAR_STATUS_RESOURCE_EXHAUSTED ? C_FAILED : C_ERROR;
  } catch (const std::exception& e) {
    log_error(slot, e.what());
    return C_INTERNAL_ERROR;
  }
}

// Fills the xccl_* slots of |api| (xccl.cc): oar::Communicator where the
// adapter is built with liboar_comm, else none (Paddle then has no xccl
// backend on oar).
void register_xccl(C_DeviceInterface* api);

}  // namespace oar_paddle
