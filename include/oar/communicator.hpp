// oar::Communicator: collectives across ranks, one device per rank, ordered on
// streams like copies and kernels (docs/runtime.md, "Collectives").
//
// Two engines sit behind it, chosen per communicator:
//  - the host-staged engine of the core, over MPI: any plugin, any mix of
//    plugins across ranks, one process per rank (mpirun, srun). Device memory
//    the host cannot address is staged through host buffers in chunks,
//    pipelined on the stream; memory the host can address (the cpu plugin) is
//    handed to MPI as it is.
//  - the plugin's own collective slots (include/oar/collective.h), for a
//    plugin that lists OAR_DEVICE_FEATURE_COLLECTIVES.
//
// The class lives in liboar_comm (CMake target oar::comm), which links MPI;
// liboar itself does not. Including <mpi.h> is optional: where it is on the
// include path (a target that links oar::comm has it), from_mpi is declared.
//
// Threading: one communicator is thread-compatible (one thread at a time);
// different communicators may be used concurrently. Every rank must issue the
// same operations on a communicator in the same order, as with MPI and NCCL.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "dlpack/dlpack.h"
#include "oar/collective.h"

#if defined(__has_include)
#if __has_include(<mpi.h>)
#include <mpi.h>
#define OAR_COMMUNICATOR_HAS_MPI 1
#endif
#endif

namespace oar {

class Buffer;
class Device;
class Stream;

namespace detail {
class CommEngine;
}  // namespace detail

enum class ReduceOp : int32_t {
  kSum = OAR_REDUCE_OP_SUM,
  kProd = OAR_REDUCE_OP_PROD,
  kMax = OAR_REDUCE_OP_MAX,
  kMin = OAR_REDUCE_OP_MIN,
  kAvg = OAR_REDUCE_OP_AVG,  // the sum divided by the number of ranks (integers truncate)
};

// Where a collective reads or writes: a buffer and a byte offset inside it.
// A Buffer converts to it implicitly (offset 0).
struct BufferRef {
  BufferRef(const Buffer& buffer, uint64_t offset = 0) : buffer(&buffer), offset(offset) {}
  const Buffer* buffer;
  uint64_t offset;
};

// Opaque bytes that one rank makes and every rank passes to create(): they
// name the communicator and its engine. Share them out of band (MPI_Bcast, a
// file, a key-value store), as with NCCL's unique id.
struct CommUniqueId {
  std::array<uint8_t, 128> bytes{};
};

class Communicator {
 public:
  // An empty communicator: every operation throws FAILED_PRECONDITION.
  Communicator();
  // Waits for the communicator's pending operations, then releases it.
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // An id for the host-staged engine over MPI: any plugin on any rank.
  static CommUniqueId unique_id();

  // Joins rank |rank| of an |nranks| communicator on |device|; blocks until
  // every rank joined. With an id of unique_id(), every process of the MPI
  // job (MPI_COMM_WORLD) calls create with the same id, one rank each.
  // Throws INVALID_ARGUMENT for a bad rank or id, FAILED_PRECONDITION when
  // MPI runs below MPI_THREAD_MULTIPLE, UNAVAILABLE when ranks disagree.
  static Communicator create(Device& device, int32_t nranks, int32_t rank, const CommUniqueId& id);

#if defined(OAR_COMMUNICATOR_HAS_MPI)
  // The host-staged engine over a duplicate of |comm| (collective over it):
  // rank and size are |comm|'s.
  static Communicator from_mpi(Device& device, MPI_Comm comm);
  // Several devices per process over |comm| (collective over it; every
  // process passes the same number K of devices): the host-staged engine,
  // rank p * K + i on devices[i] of |comm|'s rank p. The devices may be of
  // different plugins.
  static std::vector<Communicator> from_mpi(const std::vector<Device*>& devices, MPI_Comm comm);
#endif

  // Communicators for several devices of this process, rank i on
  // devices[i], all created at once (no MPI needed). Uses the plugin's
  // collective slots when every device is of one plugin that lists
  // OAR_DEVICE_FEATURE_COLLECTIVES (unless OAR_COMM_NATIVE=0), else the
  // core's host-staged engine, the ranks meeting in this process's memory
  // (any plugins, mixed too; each device needs host callbacks).
  static std::vector<Communicator> create_local(const std::vector<Device*>& devices);

  bool valid() const { return engine_ != nullptr; }
  int32_t rank() const;
  int32_t size() const;
  Device& device() const;
  // "staged-mpi" or "plugin:<name>".
  const char* engine_name() const;

  // The operations. |count| is in elements of |dtype|; every buffer is on
  // device(), as is |stream|. In place: the same buffer and offset for send
  // and recv (all_gather: send is block rank() of recv; reduce_scatter: recv
  // is block rank() of send). Ranges are checked (OUT_OF_RANGE) before
  // anything is submitted. Each call returns once its work is submitted.
  void all_reduce(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype, ReduceOp op,
                  Stream& stream);
  // |send| is read on |root| only.
  void broadcast(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype, int32_t root,
                 Stream& stream);
  // |recv| is written on |root| only.
  void reduce(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype, ReduceOp op,
              int32_t root, Stream& stream);
  // |recv| holds size() * count elements, ordered by rank.
  void all_gather(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype, Stream& stream);
  // |send| holds size() * count elements; block rank() of the reduction lands in |recv|.
  void reduce_scatter(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype, ReduceOp op,
                      Stream& stream);
  // Both hold size() * count elements; block i goes to rank i.
  void all_to_all(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype, Stream& stream);
  // Matched by a recv on |peer|; pairs that depend on each other (a ring)
  // go between group_begin and group_end.
  void send(BufferRef send, uint64_t count, DLDataType dtype, int32_t peer, Stream& stream);
  void recv(BufferRef recv, uint64_t count, DLDataType dtype, int32_t peer, Stream& stream);

  // Fuses the calling thread's operations until group_end: they are
  // submitted together, so send/recv pairs may be issued in any order across
  // ranks. Groups nest; the outermost group_end submits.
  static void group_begin();
  static void group_end();

  // Blocks until |stream|'s work is done, then throws the first error of
  // this communicator's work (a failed or aborted rank), else the stream's.
  void synchronize(Stream& stream);
  // Throws the communicator's error, if it has one.
  void check() const;
  // Fails pending operations with ABORTED; no call on the communicator
  // blocks afterwards, and later operations throw ABORTED. Callable from any
  // thread, also while another is blocked in the communicator.
  void abort();

 private:
  explicit Communicator(std::unique_ptr<detail::CommEngine> engine);
  detail::CommEngine& live(const char* operation) const;

  std::unique_ptr<detail::CommEngine> engine_;
};

}  // namespace oar
