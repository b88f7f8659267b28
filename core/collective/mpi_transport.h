// The host-staged engine's transport over MPI (Open MPI on Debian).
//
// Every operation is started with MPI's nonblocking calls (MPI_Iallreduce,
// MPI_Isend, ...) and awaited by polling MPI_Testall, so that a wait can end
// without MPI: on abort(), when a peer process on this host is gone (its pid
// is checked every 100 ms), or after OAR_COMM_TIMEOUT seconds. Open MPI 4 has
// no fault tolerance (ULFM), so the operation that was waiting stays pending
// in MPI for good: the transport is failed from then on, and the process ends
// the job (MPI_Abort) or exits.
#pragma once

#include <mpi.h>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/collective/engine.h"

namespace oar::detail {

// Initializes MPI with MPI_THREAD_MULTIPLE unless the program did (MPI is
// then finalized at exit); fails when MPI runs below MPI_THREAD_MULTIPLE.
Status ensure_mpi();

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
  // Polls |requests| until all complete, the transport is aborted, a local
  // peer is gone or the timeout passes.
  Status wait(std::vector<MPI_Request>& requests, const std::string& what);
  // "" when every peer on this host is alive, else which rank is gone.
  std::string dead_peers() const;
  // The cross-rank comparison of set_checking.
  Status check_agreement(const std::vector<HostOp>& ops);

  MPI_Comm comm_;
  int32_t rank_;
  int32_t size_;
  std::vector<Peer> peers_;
  double timeout_s_ = 0;  // 0: none
  std::atomic<bool> aborted_{false};
  std::atomic<bool> failed_{false};  // an operation was left pending in MPI
  bool checking_ = false;
};

}  // namespace oar::detail
