// The engines behind oar::Communicator, and what they share.
//
//  - CommEngine: what the C++ API calls; one per communicator.
//  - StagedEngine (staged_engine.h): the core's host-staged engine. It moves
//    device memory through host buffers on the stream and hands host memory
//    to a Transport.
//  - Transport: executes operations on host memory across ranks (MPI:
//    mpi_transport.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "dlpack/dlpack.h"
#include "oar/tracked.hpp"

namespace oar {
class Buffer;
class Device;
class Stream;
}  // namespace oar

namespace oar::detail {

enum class CollKind : uint8_t {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSend,
  kRecv,
};
const char* coll_name(CollKind kind);

// One operation as the caller gave it, already checked by the front end
// (ranges, devices, root/peer, dtype and op).
struct CollOp {
  CollKind kind = CollKind::kAllReduce;
  const Buffer* send = nullptr;  // null when the kind or this rank reads none
  uint64_t send_offset = 0;      // bytes, relative to the Buffer
  const Buffer* recv = nullptr;  // null when the kind or this rank writes none
  uint64_t recv_offset = 0;
  uint64_t count = 0;  // elements per block
  DLDataType dtype{};
  int32_t op = 0;    // oar_reduce_op_e
  int32_t peer = 0;  // root (broadcast, reduce) or peer (send, recv)
};

// The same operation on host memory, for a Transport. |send| == |recv| means
// in place for all_reduce, reduce and all_to_all; all_gather is in place when
// |send| is block rank of |recv|, reduce_scatter when |recv| is block rank of
// |send|.
struct HostOp {
  CollKind kind = CollKind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  uint64_t count = 0;
  DLDataType dtype{};
  int32_t op = 0;
  int32_t peer = 0;
  uint64_t total = 0;  // elements per block of the whole operation this piece is of
  bool opens = true;   // the operation's first piece (validation checks those)
  int32_t tag = 0;     // send/recv: the message tag (several ranks per process)
};

class Transport {
 public:
  virtual ~Transport() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  virtual const char* name() const = 0;
  // The largest count one HostOp may carry.
  virtual uint64_t max_count() const = 0;
  // Runs |ops| together: all are started before any is awaited, so send/recv
  // pairs may come in any order. Returns the first failure; a failure other
  // than a refused argument leaves the transport unusable.
  virtual Status run(const std::vector<HostOp>& ops) = 0;
  // Makes a pending and every later run return ABORTED; thread-safe.
  virtual void abort() = 0;
  // With |on|, every run first compares each collective's kind, dtype,
  // reduction, root and element count across ranks, and fails on every rank
  // with INVALID_ARGUMENT, before any data moves, when they differ
  // (OAR_VALIDATE=1). Set it alike on every rank, before the first run.
  virtual void set_checking(bool on) = 0;
};

// Tracked by its device like streams and buffers: a runtime destroyed before
// the communicator releases it in the ABI's order (after buffers, before
// device_close), and the communicator then refuses every operation.
class CommEngine : public Tracked {
 public:
  virtual ~CommEngine() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  virtual Device& device() const = 0;
  virtual const char* name() const = 0;
  // Submits |ops| (one operation, or a group's) to |stream|. Throws
  // oar::Error when they cannot be submitted.
  virtual void submit(const std::vector<CollOp>& ops, Stream& stream) = 0;
  // The communicator's first error; OK while it has none.
  virtual Status error() const = 0;
  virtual void abort() = 0;
  const char* what() const noexcept override { return "communicator"; }
};

// The error of a communicator its runtime released.
inline Status released_status() {
  return Status(OAR_STATUS_FAILED_PRECONDITION,
                "the communicator was released when its runtime was destroyed");
}

// Reductions on host memory, shared by the transports: |inout| = |inout| op
// |in| for |count| elements of |dtype| (op: SUM, PROD, MAX or MIN).
void reduce_host(DLDataType dtype, int32_t op, const void* in, void* inout, uint64_t count);
// Divides |count| elements in place by |divisor| (AVG after a SUM; integers
// truncate toward zero).
void divide_host(DLDataType dtype, void* data, uint64_t count, int32_t divisor);
// Whether reductions take |dtype| (f16, bf16, f32, f64, i8, u8, i32, i64).
bool reducible(DLDataType dtype);

}  // namespace oar::detail
