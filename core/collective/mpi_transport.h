// The host-staged engine's transport over MPI (Open MPI on Debian).
//
// Every operation is started with MPI's nonblocking calls (MPI_Iallreduce,
// MPI_Isend, ...) and awaited by polling MPI_Testall, so that a wait can end
// without MPI: on abort(), when a peer process on this host is gone (its pid
// is checked every 100 ms), or after OAR_COMM_TIMEOUT seconds. A lone
// all_reduce of at least kRingMinBytes (or any, with OAR_COMM_ALLREDUCE=ring)
// runs as a pipelined ring of MPI_Isend/MPI_Irecv on segments of
// OAR_COMM_SEGMENT_KB, reduced here with MPI_Reduce_local, and is awaited the
// same way: Open MPI's nonblocking MPI_Iallreduce (libnbc) takes a binomial
// tree for 2 or 3 ranks, which moves twice the data of a ring and reduces on
// one rank only (docs/performance.md, "Collectives"). Open MPI 4 has
// no fault tolerance (ULFM), so the operation that was waiting stays pending
// in MPI for good: the transport is failed from then on, and the process ends
// the job (MPI_Abort) or exits.
#pragma once

#include <mpi.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/collective/engine.h"

namespace oar::detail {

// Initializes MPI with MPI_THREAD_MULTIPLE unless the program did (MPI is
// then finalized at exit); fails when MPI runs below MPI_THREAD_MULTIPLE.
Status ensure_mpi();

// The smallest all_reduce (bytes per rank) that runs as OAR's ring by
// default (OAR_COMM_ALLREDUCE=auto); smaller ones are MPI_Iallreduce.
constexpr uint64_t kRingMinBytes = uint64_t(64) << 10;

class MpiTransport final : public Transport {
 public:
  // Takes ownership of |comm| (freed in the destructor). Collective over it:
  // exchanges each rank's host name and pid for the liveness checks.
  static Result<std::unique_ptr<MpiTransport>> create(MPI_Comm comm);
  ~MpiTransport() override;

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  const char* name() const override { return "staged-mpi"; }
  uint64_t max_count() const override { return uint64_t(1) << 30; }
  Status run(const std::vector<HostOp>& ops) override;
  void abort() override { aborted_.store(true); }
  void set_checking(bool on) override { checking_ = on; }

 private:
  struct Peer {
    std::string host;
    int64_t pid = 0;
  };
  MpiTransport(MPI_Comm comm, int32_t rank, int32_t size) : comm_(comm), rank_(rank), size_(size) {}
  // One poll of an operation: an MPI error code; sets |done| when it is
  // complete and |moved| when something completed in this poll.
  using Poll = std::function<int(bool* done, bool* moved)>;
  // Calls |poll| until it is done, fails, the transport is aborted, a local
  // peer is gone or the timeout passes. Yields the core (every 64 polls) only
  // when nothing moved for a millisecond.
  Status poll_until(const Poll& poll, const std::string& what);
  // Polls |requests| until all complete (poll_until).
  Status wait(std::vector<MPI_Request>& requests, const std::string& what);
  // |op| (an all_reduce) as a pipelined ring over point-to-point messages.
  Status ring_all_reduce(const HostOp& op, const std::string& what);
  // "" when every peer on this host is alive, else which rank is gone.
  std::string dead_peers() const;
  // OAR_COMM_ALLREDUCE and OAR_COMM_SEGMENT_KB.
  Status read_ring_settings();
  // The cross-rank comparison of set_checking.
  Status check_agreement(const std::vector<HostOp>& ops);

  MPI_Comm comm_;
  // A duplicate of comm_: the ring's messages in a context of their own.
  MPI_Comm ring_comm_ = MPI_COMM_NULL;
  int32_t rank_;
  int32_t size_;
  std::vector<Peer> peers_;
  double timeout_s_ = 0;  // 0: none
  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};  // an operation was left pending in MPI
  bool checking_ = false;
  int ring_mode_ = 0;                   // OAR_COMM_ALLREDUCE: 0 auto, 1 ring, 2 mpi
  uint64_t segment_bytes_ = 256 << 10;  // OAR_COMM_SEGMENT_KB
  int tag_ub_ = 32767;                  // MPI_TAG_UB
  std::mutex ring_mutex_;               // guards ring_scratch_
  std::vector<char> ring_scratch_;      // in place: the segments received
};

}  // namespace oar::detail
