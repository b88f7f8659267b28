#include "core/collective/local_transport.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "oar/collective.h"
#include "oar/dtype.hpp"
#include "oar/error.hpp"

namespace oar::detail {
namespace {

bool point_to_point(const HostOp& op) {
  return op.kind == CollKind::kSend || op.kind == CollKind::kRecv;
}

class LocalGroup {
 public:
  LocalGroup(int32_t k, std::unique_ptr<Transport> inner)
      : k_(k),
        inner_(std::move(inner)),
        process_(inner_ ? inner_->rank() : 0),
        processes_(inner_ ? inner_->size() : 1),
        queues_(size_t(k)),
        posted_(size_t(k), 0) {}

  int32_t k() const { return k_; }
  int32_t process() const { return process_; }
  int32_t processes() const { return processes_; }
  Transport* inner() const { return inner_.get(); }

  uint64_t max_count() const {
    return inner_ ? std::max<uint64_t>(1, inner_->max_count() / uint64_t(k_) / uint64_t(k_))
                  : uint64_t(1) << 40;
  }

  // Collectives are matched across the local ranks by their position in each
  // rank's sequence, whatever steps the ranks cut them into (a rank whose
  // memory is host-addressable hands a whole operation over at once, a staged
  // one chunk by chunk): whoever posts the last part of the next collective
  // runs it. Sends and receives follow, each rank on its own thread.
  Status run(int32_t local, const std::vector<HostOp>& ops) {
    std::vector<const HostOp*> p2p;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      if (aborted_) return aborted_status();
      if (!failure_.ok()) return failure_;
      for (const HostOp& op : ops) {
        if (point_to_point(op)) {
          p2p.push_back(&op);
        } else {
          queues_[size_t(local)].push_back(&op);
        }
      }
      posted_[size_t(local)] += ops.size() - p2p.size();
      const uint64_t mine = posted_[size_t(local)];
      while (executed_ < mine) {
        if (aborted_ || !failure_.ok()) {
          // The rank running a collective reads and writes every rank's
          // memory through their ops: this rank's must outlive that.
          cv_.wait(lock, [&] { return !executing_; });
          return aborted_ ? aborted_status() : failure_;
        }
        const bool ready = std::all_of(queues_.begin(), queues_.end(),
                                       [](const auto& queue) { return !queue.empty(); });
        if (!ready || executing_) {
          cv_.wait(lock);
          continue;
        }
        executing_ = true;
        std::vector<const HostOp*> next;
        for (const auto& queue : queues_) next.push_back(queue.front());
        lock.unlock();
        Status status = collective_checked(next);
        lock.lock();
        for (auto& queue : queues_) queue.pop_front();
        ++executed_;
        executing_ = false;
        if (!status.ok() && failure_.ok()) failure_ = status;
        cv_.notify_all();
      }
      if (!failure_.ok()) return failure_;
    }
    if (p2p.empty()) return Status();
    Status status = point_to_point_ops(local, p2p);
    if (!status.ok()) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (failure_.ok()) failure_ = status;
      cv_.notify_all();
    }
    return status;
  }

  void abort() {
    if (inner_) inner_->abort();
    std::lock_guard<std::mutex> lock(mutex_);
    aborted_ = true;
    cv_.notify_all();
  }

  void set_checking(bool on) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!checking_set_ && inner_) inner_->set_checking(on);
    checking_set_ = true;
  }

 private:
  static Status aborted_status() {
    return Status(OAR_STATUS_ABORTED, "the communicator was aborted");
  }

  int32_t global(int32_t local) const { return process_ * k_ + local; }

  Status run_inner(const HostOp& op) {
    if (!inner_) return Status();
    return inner_->run({op});
  }

  // The local ranks' parts of one collective, checked to agree.
  Status collective_checked(const std::vector<const HostOp*>& ops) {
    for (int32_t i = 1; i < k_; ++i) {
      const HostOp& a = *ops[0];
      const HostOp& b = *ops[size_t(i)];
      if (a.kind != b.kind || a.count != b.count || !(a.dtype == b.dtype) || a.op != b.op ||
          a.peer != b.peer) {
        return disagree(i, std::string(coll_name(b.kind)) + " of " + std::to_string(b.count) + " " +
                               dtype_name(b.dtype) + " where rank " + std::to_string(global(0)) +
                               " issued " + coll_name(a.kind) + " of " + std::to_string(a.count) +
                               " " + dtype_name(a.dtype));
      }
    }
    return collective(ops);
  }

  Status disagree(int32_t local, const std::string& what) {
    return Status(OAR_STATUS_INVALID_ARGUMENT, "the ranks of one process disagree: rank " +
                                                   std::to_string(global(local)) + " issued " +
                                                   what);
  }

  // |ops|[i] is local rank i's part of one collective.
  Status collective(const std::vector<const HostOp*>& ops) {
    const HostOp& first = *ops[0];
    const uint64_t c = first.count;
    const uint64_t es = dtype_size(first.dtype);
    const uint64_t bytes = c * es;
    const uint64_t n = uint64_t(processes_) * uint64_t(k_);
    const uint64_t k = uint64_t(k_);
    const int32_t op = first.op == OAR_REDUCE_OP_AVG ? OAR_REDUCE_OP_SUM : first.op;
    HostOp inner = first;
    inner.op = op;
    auto reduce_local = [&](uint64_t count, std::vector<char>& into) {
      into.assign(static_cast<const char*>(ops[0]->send),
                  static_cast<const char*>(ops[0]->send) + count * es);
      for (int32_t i = 1; i < k_; ++i)
        reduce_host(first.dtype, op, ops[size_t(i)]->send, into.data(), count);
    };
    auto average = [&](void* data, uint64_t count) {
      if (first.op == OAR_REDUCE_OP_AVG) divide_host(first.dtype, data, count, int32_t(n));
    };
    switch (first.kind) {
      case CollKind::kAllReduce: {
        std::vector<char> sum, result(bytes);
        reduce_local(c, sum);
        inner.send = sum.data();
        inner.recv = result.data();
        if (inner_) {
          Status status = run_inner(inner);
          if (!status.ok()) return status;
        } else {
          result = sum;
        }
        average(result.data(), c);
        for (const HostOp* mine : ops) std::memcpy(mine->recv, result.data(), bytes);
        return Status();
      }
      case CollKind::kReduce: {
        const int32_t root_process = first.peer / k_;
        std::vector<char> sum, result(bytes);
        reduce_local(c, sum);
        inner.send = sum.data();
        inner.recv = result.data();
        inner.peer = root_process;
        if (inner_) {
          Status status = run_inner(inner);
          if (!status.ok()) return status;
        } else {
          result = sum;
        }
        if (root_process == process_) {
          average(result.data(), c);
          const HostOp& root = *ops[size_t(first.peer % k_)];
          if (root.recv != nullptr) std::memcpy(root.recv, result.data(), bytes);
        }
        return Status();
      }
      case CollKind::kBroadcast: {
        const int32_t root_process = first.peer / k_;
        std::vector<char> data(bytes);
        if (root_process == process_) {
          std::memcpy(data.data(), ops[size_t(first.peer % k_)]->send, bytes);
        }
        inner.send = data.data();
        inner.recv = data.data();
        inner.peer = root_process;
        Status status = run_inner(inner);
        if (!status.ok()) return status;
        for (const HostOp* mine : ops) std::memcpy(mine->recv, data.data(), bytes);
        return Status();
      }
      case CollKind::kAllGather: {
        std::vector<char> all(n * bytes);
        char* block = all.data() + uint64_t(process_) * k * bytes;
        for (int32_t i = 0; i < k_; ++i)
          std::memcpy(block + uint64_t(i) * bytes, ops[size_t(i)]->send, bytes);
        inner.send = block;
        inner.recv = all.data();
        inner.count = k * c;
        inner.total = k * first.total;
        Status status = run_inner(inner);
        if (!status.ok()) return status;
        for (const HostOp* mine : ops) std::memcpy(mine->recv, all.data(), n * bytes);
        return Status();
      }
      case CollKind::kReduceScatter: {
        std::vector<char> sum, mine_blocks(k * bytes);
        reduce_local(n * c, sum);
        inner.send = sum.data();
        inner.recv = mine_blocks.data();
        inner.count = k * c;
        inner.total = k * first.total;
        if (inner_) {
          Status status = run_inner(inner);
          if (!status.ok()) return status;
        } else {
          mine_blocks = sum;
        }
        average(mine_blocks.data(), k * c);
        for (int32_t i = 0; i < k_; ++i) {
          std::memcpy(ops[size_t(i)]->recv, mine_blocks.data() + uint64_t(i) * bytes, bytes);
        }
        return Status();
      }
      case CollKind::kAllToAll: {
        // out[q][i][j] = block q*K + j of local rank i: what process q's
        // local rank j receives from rank p*K + i.
        const uint64_t processes = uint64_t(processes_);
        std::vector<char> out(n * k * bytes), in(n * k * bytes);
        for (uint64_t q = 0; q < processes; ++q) {
          for (uint64_t i = 0; i < k; ++i) {
            for (uint64_t j = 0; j < k; ++j) {
              std::memcpy(out.data() + ((q * k + i) * k + j) * bytes,
                          static_cast<const char*>(ops[i]->send) + (q * k + j) * bytes, bytes);
            }
          }
        }
        inner.send = out.data();
        inner.recv = in.data();
        inner.count = k * k * c;
        inner.total = k * k * first.total;
        if (inner_) {
          Status status = run_inner(inner);
          if (!status.ok()) return status;
        } else {
          in = out;
        }
        for (uint64_t q = 0; q < processes; ++q) {
          for (uint64_t i = 0; i < k; ++i) {
            for (uint64_t j = 0; j < k; ++j) {
              std::memcpy(static_cast<char*>(ops[j]->recv) + (q * k + i) * bytes,
                          in.data() + ((q * k + i) * k + j) * bytes, bytes);
            }
          }
        }
        return Status();
      }
      default:
        return Status(OAR_STATUS_INTERNAL, "local transport: not a collective");
    }
  }

  // One local rank's sends and receives: to a rank of this process through a
  // mailbox (the data is copied at the send, so sends never wait), to other
  // processes through the inner transport, tagged by the pair of ranks so
  // that several local ranks' messages cannot be confused.
  Status point_to_point_ops(int32_t local, const std::vector<const HostOp*>& ops) {
    const int32_t me = global(local);
    const int32_t n = processes_ * k_;
    auto is_local = [&](int32_t rank) { return rank / k_ == process_; };
    std::vector<HostOp> remote;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      for (const HostOp* op : ops) {
        if (op->kind != CollKind::kSend) continue;
        if (is_local(op->peer)) {
          const char* data = static_cast<const char*>(op->send);
          mailbox_[{me, op->peer}].push_back(
              Letter{op->count, op->dtype,
                     std::vector<char>(data, data + op->count * dtype_size(op->dtype))});
        } else {
          HostOp copy = *op;
          copy.peer = op->peer / k_;
          copy.tag = me * n + op->peer;
          remote.push_back(copy);
        }
      }
      cv_.notify_all();
    }
    for (const HostOp* op : ops) {
      if (op->kind == CollKind::kRecv && !is_local(op->peer)) {
        HostOp copy = *op;
        copy.peer = op->peer / k_;
        copy.tag = op->peer * n + me;
        remote.push_back(copy);
      }
    }
    if (!remote.empty()) {
      if (!inner_)
        return Status(OAR_STATUS_INTERNAL, "local transport: a peer outside the process");
      Status status = inner_->run(remote);
      if (!status.ok()) return status;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    for (const HostOp* op : ops) {
      if (op->kind != CollKind::kRecv || !is_local(op->peer)) continue;
      auto& box = mailbox_[{op->peer, me}];
      cv_.wait(lock, [&] { return !box.empty() || aborted_ || !failure_.ok(); });
      if (box.empty()) return aborted_ ? aborted_status() : failure_;
      Letter letter = std::move(box.front());
      box.pop_front();
      if (letter.count != op->count || !(letter.dtype == op->dtype)) {
        return Status(OAR_STATUS_INVALID_ARGUMENT,
                      "send from rank " + std::to_string(op->peer) + " to rank " +
                          std::to_string(me) + " of " + std::to_string(letter.count) + " " +
                          dtype_name(letter.dtype) + " meets a recv of " +
                          std::to_string(op->count) + " " + dtype_name(op->dtype));
      }
      if (!letter.data.empty()) std::memcpy(op->recv, letter.data.data(), letter.data.size());
    }
    return Status();
  }

  struct Letter {
    uint64_t count;
    DLDataType dtype;
    std::vector<char> data;
  };

  const int32_t k_;
  std::unique_ptr<Transport> inner_;
  const int32_t process_;
  const int32_t processes_;

  std::mutex mutex_;  // guards everything below
  std::condition_variable cv_;
  std::vector<std::deque<const HostOp*>> queues_;  // collectives posted, not yet run
  std::vector<uint64_t> posted_;                   // collectives posted by each local rank
  uint64_t executed_ = 0;                          // collectives run
  bool executing_ = false;
  std::map<std::pair<int32_t, int32_t>, std::deque<Letter>> mailbox_;  // (from, to)
  Status failure_;  // the first failure: the transport is unusable after it
  bool aborted_ = false;
  bool checking_set_ = false;
};

class LocalTransport final : public Transport {
 public:
  LocalTransport(std::shared_ptr<LocalGroup> group, int32_t local)
      : group_(std::move(group)), local_(local) {}
  int32_t rank() const override { return group_->process() * group_->k() + local_; }
  int32_t size() const override { return group_->processes() * group_->k(); }
  const char* name() const override { return group_->inner() ? "staged-mpi" : "staged-local"; }
  uint64_t max_count() const override { return group_->max_count(); }
  Status run(const std::vector<HostOp>& ops) override { return group_->run(local_, ops); }
  void abort() override { group_->abort(); }
  void set_checking(bool on) override { group_->set_checking(on); }

 private:
  std::shared_ptr<LocalGroup> group_;
  int32_t local_;
};

}  // namespace

std::vector<std::unique_ptr<Transport>> make_local_transports(int32_t local_ranks,
                                                              std::unique_ptr<Transport> inner) {
  if (local_ranks < 1) {
    throw Error(OAR_STATUS_INVALID_ARGUMENT, "communicator: no local devices");
  }
  if (inner) {
    // Every process must bring the same number of devices.
    int32_t mine[2] = {local_ranks, -local_ranks};
    int32_t all[2] = {0, 0};
    Status agreed = inner->run(
        {HostOp{CollKind::kAllReduce, mine, all, 2, dtype::i32, OAR_REDUCE_OP_MAX, 0, 2}});
    if (!agreed.ok()) throw Error(agreed.code(), "creating the communicator: " + agreed.message());
    if (all[0] != local_ranks || -all[1] != local_ranks) {
      throw Error(OAR_STATUS_INVALID_ARGUMENT,
                  "creating the communicator: the processes bring between " +
                      std::to_string(-all[1]) + " and " + std::to_string(all[0]) +
                      " devices each; every process must bring the same number");
    }
  }
  auto group = std::make_shared<LocalGroup>(local_ranks, std::move(inner));
  std::vector<std::unique_ptr<Transport>> transports;
  for (int32_t i = 0; i < local_ranks; ++i) {
    transports.push_back(std::make_unique<LocalTransport>(group, i));
  }
  return transports;
}

}  // namespace oar::detail
