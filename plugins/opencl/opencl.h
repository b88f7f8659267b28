// The opencl plugin: every device of every OpenCL platform the ICD loader
// finds is an OAR device. Memory handles are cl_mem objects (addressed as
// cl_mem + byte offset, no SVM), streams are in-order command queues, events
// are markers on them, kernels are OpenCL C built per device (program.h).
#pragma once

#include <CL/cl.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "error.h"
#include "oar/oar.h"
#include "oar/sdk/allocation_table.hpp"
#include "oar/sdk/host_wait.hpp"
#include "oar/sdk/plugin.hpp"

namespace oar::opencl {

class ProgramCache;

// One OpenCL device as the plugin found it, with the context every handle
// opened on it shares (so that events and buffers cross handles freely).
struct PhysicalDevice {
  cl_platform_id platform = nullptr;
  cl_device_id device = nullptr;
  cl_context context = nullptr;
  oar_device_properties_t properties{};
  std::string platform_name;
  bool fp16 = false;
  bool fp64 = false;
  bool profiling = false;
  bool correctly_rounded_sqrt = false;
  size_t max_work_group_size = 1;
  std::unique_ptr<ProgramCache> programs;
};

// The stream's failure state, shared with the records made on it so that an
// event outlives its stream. Kernels that can fail asynchronously (an index
// out of range) fill |flag|, a record of 3 longs on the device: the failing
// operator's code in the low int of [0] (0: none), the index and its bound
// (common.cl, index_error). |message| names them once the stream has read it.
struct StreamErrors {
  cl_mem flag = nullptr;                            // created by the first kernel that needs it
  std::atomic<oar_status_t> status{OAR_STATUS_OK};  // sticky once failed
  std::mutex mutex;                                 // guards |message|
  std::string message;
  ~StreamErrors();
};

// One point in a stream: the command whose completion marks it. Where the
// stream has an error flag, the command is a read of the flag into |flag_value|
// so that the point knows whether work before it failed.
struct Record {
  cl_event event = nullptr;
  std::shared_ptr<StreamErrors> errors;
  int32_t flag_value = 0;
  bool reads_flag = false;
  ~Record();
  // True once the command completed or failed (or its state is unreadable);
  // never blocks.
  bool completed() const;
  // OK, or the error of the work before the record (after it completed).
  oar_status_t status_after_completion() const;
};

// A host callback waiting for its point of the stream.
struct CallbackTask {
  std::shared_ptr<Record> point;
  cl_event release = nullptr;  // user event that later work of the stream waits on
  oar_host_callback_fn callback = nullptr;
  void* user_data = nullptr;
};

}  // namespace oar::opencl

struct oar_device_s {
  oar::opencl::PhysicalDevice* physical = nullptr;
  int32_t index = 0;
  std::mutex mutex;
  std::unordered_set<oar_stream_s*> streams;
  std::unordered_set<oar_event_s*> events;
};

struct oar_stream_s {
  oar_device_s* device = nullptr;
  cl_command_queue queue = nullptr;
  std::shared_ptr<oar::opencl::StreamErrors> errors;
  oar::sdk::HostWait waits;  // synchronize's: polls first while waits are short
  // Host callbacks run on this stream's own thread, never on a driver thread:
  // a callback may block (a gate) without stalling the OpenCL runtime.
  std::mutex callback_mutex;
  std::condition_variable callback_ready;
  std::deque<oar::opencl::CallbackTask> callbacks;
  std::thread callback_thread;
  bool stopping = false;
};

struct oar_event_s {
  oar_device_s* device = nullptr;
  uint32_t flags = 0;
  std::mutex mutex;
  std::shared_ptr<oar::opencl::Record> record;  // null until first recorded
  oar::sdk::HostWait waits;                     // event_synchronize's

  std::shared_ptr<oar::opencl::Record> latest() {
    std::lock_guard<std::mutex> lock(mutex);
    return record;
  }
};

namespace oar::opencl {

// The plugin's allocations: a cl_mem is the oar_memory_t; its requested size
// (a zero-size allocation holds a 1-byte buffer) is kept for range checks.
using AllocationTable = oar::sdk::AllocationTable;

using oar::sdk::require_not_null;

// stream.cc: a new point at the end of |stream|'s work (a marker, or a read
// of the error flag where the stream has one). Flushes the queue so that the
// point completes without a later synchronize.
std::shared_ptr<Record> enqueue_point(oar_stream_t stream);
// Throws the stream's error if its work failed (after the work completed).
void throw_if_failed(oar_stream_t stream);
// The stream's error flag, created on first use.
cl_mem error_flag(oar_stream_t stream);

class OpenclPlugin {
 public:
  OpenclPlugin();
  ~OpenclPlugin();

  // plugin.cc
  void device_count(int32_t* out_count);
  void device_properties(int32_t index, oar_device_properties_t* out_properties);
  void device_open(int32_t index, oar_device_t* out_device);
  void device_close(oar_device_t device);
  void device_synchronize(oar_device_t device);
  void device_memory_info(oar_device_t device, uint64_t* out_free, uint64_t* out_total);

  // backend.cc (the operators: kernels/*.cc through its Backend)
  void register_kernels(const oar_kernel_registrar_t* registrar);

  // stream.cc
  void stream_create(oar_device_t device, const oar_stream_desc_t* desc, oar_stream_t* out_stream);
  void stream_destroy(oar_stream_t stream);
  void stream_synchronize(oar_stream_t stream);
  void stream_query(oar_stream_t stream, bool* out_idle);
  void stream_wait_event(oar_stream_t stream, oar_event_t event);
  void stream_add_host_callback(oar_stream_t stream, oar_host_callback_fn callback,
                                void* user_data);

  // event.cc
  void event_create(oar_device_t device, uint32_t flags, oar_event_t* out_event);
  void event_destroy(oar_event_t event);
  void event_record(oar_event_t event, oar_stream_t stream);
  void event_query(oar_event_t event, bool* out_done);
  void event_synchronize(oar_event_t event);
  void event_elapsed_ms(oar_event_t start, oar_event_t end, float* out_ms);

  // memory.cc
  void memory_allocate(oar_device_t device, uint64_t size, uint32_t kind, oar_memory_t* out_memory);
  void memory_free(oar_device_t device, oar_memory_t memory);
  void memory_copy_h2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
                       uint64_t size);
  void memory_copy_d2h(oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
                       uint64_t size);
  void memory_copy_d2d(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
                       uint64_t src_offset, uint64_t size);
  void memory_fill(oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
                   uint64_t size);

  AllocationTable& allocations() { return allocations_; }

 private:
  std::vector<std::unique_ptr<PhysicalDevice>> devices_;
  AllocationTable allocations_{"opencl", AllocationTable::Unknown::kRefuse};
  std::mutex devices_mutex_;
  std::unordered_set<oar_device_s*> open_;

  void require_index(int32_t index) const;
  void release_device(oar_device_s* device);
  void destroy_stream(oar_stream_s* stream);
};

// The plugin instance (kernels reach the allocation table through it).
OpenclPlugin& plugin();

}  // namespace oar::opencl
