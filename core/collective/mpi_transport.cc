#include "core/collective/mpi_transport.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <mutex>

#include "oar/collective.h"
#include "oar/dtype.hpp"

namespace oar::detail {
namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  return std::string(text, length > 0 ? size_t(length) : 0);
}

void finalize_mpi_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// MPI's reductions do not know f16 and bf16: these user operations reduce
// them through float. One per (type, op) since an MPI_User_function is told
// neither.
template <bool kHalf, int32_t kOp>
void reduce_16bit(void* in, void* inout, int* length, MPI_Datatype* /*type*/) {
  reduce_host(kHalf ? dtype::f16 : dtype::bf16, kOp, in, inout, uint64_t(*length));
}

struct UserOps {
  MPI_Op ops[2][4];  // [bf16, f16][SUM, PROD, MAX, MIN]
};

const UserOps& user_ops() {
  static const UserOps ops = [] {
    UserOps made{};
    MPI_Op_create(&reduce_16bit<false, OAR_REDUCE_OP_SUM>, 1, &made.ops[0][0]);
    MPI_Op_create(&reduce_16bit<false, OAR_REDUCE_OP_PROD>, 1, &made.ops[0][1]);
    MPI_Op_create(&reduce_16bit<false, OAR_REDUCE_OP_MAX>, 1, &made.ops[0][2]);
    MPI_Op_create(&reduce_16bit<false, OAR_REDUCE_OP_MIN>, 1, &made.ops[0][3]);
    MPI_Op_create(&reduce_16bit<true, OAR_REDUCE_OP_SUM>, 1, &made.ops[1][0]);
    MPI_Op_create(&reduce_16bit<true, OAR_REDUCE_OP_PROD>, 1, &made.ops[1][1]);
    MPI_Op_create(&reduce_16bit<true, OAR_REDUCE_OP_MAX>, 1, &made.ops[1][2]);
    MPI_Op_create(&reduce_16bit<true, OAR_REDUCE_OP_MIN>, 1, &made.ops[1][3]);
    return made;
  }();
  return ops;
}

MPI_Datatype mpi_type(DLDataType t) {
  if (t == dtype::f32) return MPI_FLOAT;
  if (t == dtype::f64) return MPI_DOUBLE;
  if (t == dtype::i32) return MPI_INT32_T;
  if (t == dtype::i64) return MPI_INT64_T;
  if (t == dtype::i8) return MPI_INT8_T;
  if (t == dtype::u8 || t == dtype::boolean) return MPI_UINT8_T;
  if (t == dtype::f16 || t == dtype::bf16) return MPI_UINT16_T;
  // Any other whole-byte type moves as bytes of its size (no reductions).
  static std::mutex mutex;
  static MPI_Datatype by_size[65] = {};
  uint64_t size = dtype_size(t);
  std::lock_guard<std::mutex> lock(mutex);
  if (size > 64) size = 0;
  if (by_size[size] == MPI_Datatype{}) {
    MPI_Type_contiguous(int(size), MPI_BYTE, &by_size[size]);
    MPI_Type_commit(&by_size[size]);
  }
  return by_size[size];
}

MPI_Op mpi_op(DLDataType t, int32_t op) {
  int index = op == OAR_REDUCE_OP_AVG ? 0 : op;  // AVG: a SUM, divided afterwards
  if (t == dtype::f16 || t == dtype::bf16) return user_ops().ops[t == dtype::f16][index];
  static const MPI_Op builtin[4] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
  return builtin[index];
}

bool process_gone(int64_t pid) {
  if (kill(pid_t(pid), 0) != 0 && errno == ESRCH) return true;
  // A killed child stays a zombie until reaped: it is gone as well.
  // read() of the stat of a process that exits meanwhile fails with ESRCH,
  // on which libstdc++'s filebuf throws: the process is gone.
  std::string line;
  try {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!std::getline(stat, line)) return false;
  } catch (const std::exception&) {
    return true;
  }
  size_t paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

std::string host_name() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

Status ensure_mpi() {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  int initialized = 0;
  MPI_Initialized(&initialized);
  int provided = 0;
  if (!initialized) {
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided);
    if (code != MPI_SUCCESS) {
      return Status(OAR_STATUS_UNAVAILABLE, "MPI_Init_thread failed: " + mpi_error(code));
    }
    atexit(&finalize_mpi_at_exit);
  } else {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) {
      return Status(OAR_STATUS_FAILED_PRECONDITION,
                    "MPI was finalized already; create communicators before MPI_Finalize");
    }
    MPI_Query_thread(&provided);
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    return Status(OAR_STATUS_FAILED_PRECONDITION,
                  "MPI runs at thread level " + std::to_string(provided) +
                      "; the staged collectives call MPI from stream threads and need "
                      "MPI_THREAD_MULTIPLE (initialize MPI with MPI_Init_thread and "
                      "MPI_THREAD_MULTIPLE, or let OAR initialize it)");
  }
  (void)user_ops();
  return Status();
}

Result<std::unique_ptr<MpiTransport>> MpiTransport::create(MPI_Comm comm) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::unique_ptr<MpiTransport> transport(new MpiTransport(comm, rank, size));
  // A bad setting on one rank fails every rank (after the exchange, so that
  // none is left waiting in it).
  const Status settings = transport->read_ring_settings();
  struct Identity {
    char host[120];
    int64_t pid;
    int64_t ring_mode;  // the settings every rank must share
    int64_t segment_bytes;
  };
  Identity mine{};
  std::string host = host_name();
  std::strncpy(mine.host, host.c_str(), sizeof mine.host - 1);
  mine.pid = getpid();
  mine.ring_mode = settings.ok() ? transport->ring_mode_ : -1;
  mine.segment_bytes = int64_t(transport->segment_bytes_);
  std::vector<Identity> all(size);
  int code = MPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine),
                           MPI_BYTE, comm);
  if (code != MPI_SUCCESS) {
    return Status(OAR_STATUS_UNAVAILABLE, "MPI_Allgather of the ranks' hosts: " + mpi_error(code));
  }
  for (const Identity& identity : all) {
    transport->peers_.push_back(Peer{
        std::string(identity.host, strnlen(identity.host, sizeof identity.host)), identity.pid});
  }
  if (!settings.ok()) return settings;
  for (int r = 0; r < size; ++r) {
    if (all[r].ring_mode < 0) {
      return Status(OAR_STATUS_INVALID_ARGUMENT, "rank " + std::to_string(r) +
                                                     " refused its OAR_COMM_ALLREDUCE or "
                                                     "OAR_COMM_SEGMENT_KB");
    }
  }
  for (int r = 1; r < size; ++r) {
    // Every rank cuts an all_reduce alike, or the ranks' messages do not match.
    if (all[r].ring_mode != all[0].ring_mode || all[r].segment_bytes != all[0].segment_bytes) {
      return Status(OAR_STATUS_INVALID_ARGUMENT,
                    "OAR_COMM_ALLREDUCE or OAR_COMM_SEGMENT_KB differ between rank 0 and rank " +
                        std::to_string(r) + "; set them alike on every rank");
    }
  }
  code = MPI_Comm_dup(comm, &transport->ring_comm_);
  if (code != MPI_SUCCESS) {
    transport->ring_comm_ = MPI_COMM_NULL;
    return Status(OAR_STATUS_UNAVAILABLE, "MPI_Comm_dup: " + mpi_error(code));
  }
  MPI_Comm_set_errhandler(transport->ring_comm_, MPI_ERRORS_RETURN);
  int* tag_ub = nullptr;
  int has_tag_ub = 0;
  MPI_Comm_get_attr(comm, MPI_TAG_UB, &tag_ub, &has_tag_ub);
  if (has_tag_ub && tag_ub != nullptr && *tag_ub > 0) transport->tag_ub_ = *tag_ub;
  if (const char* timeout = secure_getenv("OAR_COMM_TIMEOUT")) {
    char* end = nullptr;
    double seconds = std::strtod(timeout, &end);
    if (end == timeout || *end != '\0' || !(seconds >= 0)) {
      return Status(OAR_STATUS_INVALID_ARGUMENT,
                    std::string("OAR_COMM_TIMEOUT=\"") + timeout +
                        "\" is not a number of seconds (0 waits without limit)");
    }
    transport->timeout_s_ = seconds;
  }
  return transport;
}

MpiTransport::~MpiTransport() {
  // A communicator with an operation left pending cannot be freed safely.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (failed_ || finalized) return;
  if (ring_comm_ != MPI_COMM_NULL) MPI_Comm_free(&ring_comm_);
  MPI_Comm_free(&comm_);
}

Status MpiTransport::read_ring_settings() {
  if (const char* mode = secure_getenv("OAR_COMM_ALLREDUCE")) {
    const std::string text = mode;
    if (text == "auto" || text.empty()) {
      ring_mode_ = 0;
    } else if (text == "ring") {
      ring_mode_ = 1;
    } else if (text == "mpi") {
      ring_mode_ = 2;
    } else {
      return Status(OAR_STATUS_INVALID_ARGUMENT,
                    "OAR_COMM_ALLREDUCE=\"" + text + "\" is not auto, ring or mpi");
    }
  }
  if (const char* text = secure_getenv("OAR_COMM_SEGMENT_KB")) {
    char* end = nullptr;
    unsigned long long kb = std::strtoull(text, &end, 10);
    if (end == text || *end != '\0' || kb == 0 || kb > (uint64_t(1) << 20)) {
      return Status(OAR_STATUS_INVALID_ARGUMENT, std::string("OAR_COMM_SEGMENT_KB=\"") + text +
                                                     "\" is not a size in KiB (1 .. 2^20)");
    }
    segment_bytes_ = uint64_t(kb) << 10;
  }
  return Status();
}

std::string MpiTransport::dead_peers() const {
  static const std::string self = host_name();
  std::string dead;
  for (int32_t r = 0; r < size_; ++r) {
    if (r == rank_ || peers_[r].host != self || !process_gone(peers_[r].pid)) continue;
    if (!dead.empty()) dead += ", ";
    dead += "rank " + std::to_string(r) + " (pid " + std::to_string(peers_[r].pid) + " on " +
            peers_[r].host + ")";
  }
  return dead;
}

Status MpiTransport::poll_until(const Poll& poll, const std::string& what) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  Clock::time_point next_check = start + std::chrono::milliseconds(100);
  Clock::time_point last_moved = start;
  bool moved_lately = false;
  for (uint64_t spins = 0;; ++spins) {
    bool done = false;
    bool moved = false;
    int code = poll(&done, &moved);
    if (code != MPI_SUCCESS) {
      failed_ = true;
      return Status(OAR_STATUS_UNAVAILABLE, what + ": MPI failed: " + mpi_error(code));
    }
    if (done) return Status();
    moved_lately = moved_lately || moved;
    if (aborted_.load(std::memory_order_relaxed)) {
      failed_ = true;
      return Status(OAR_STATUS_ABORTED, what + ": the communicator was aborted");
    }
    if (spins % 64 != 63) continue;
    Clock::time_point now = Clock::now();
    // Nothing moved for a millisecond: let the other threads of an
    // oversubscribed host run (on a core of its own, sched_yield returns at
    // once). While messages complete, keep the core: the peers wait on them.
    if (moved_lately) {
      last_moved = now;
      moved_lately = false;
    } else if (now - last_moved > std::chrono::milliseconds(1)) {
      sched_yield();
    }
    if (now < next_check) continue;
    next_check = now + std::chrono::milliseconds(100);
    std::string dead = dead_peers();
    if (!dead.empty()) {
      failed_ = true;
      return Status(OAR_STATUS_UNAVAILABLE, what + ": " + dead +
                                                " exited while this rank waited; the communicator "
                                                "is unusable (end the job)");
    }
    double waited = std::chrono::duration<double>(now - start).count();
    if (timeout_s_ > 0 && waited > timeout_s_) {
      failed_ = true;
      return Status(OAR_STATUS_DEADLINE_EXCEEDED,
                    what + ": not complete after " + std::to_string(int(waited)) +
                        " s (OAR_COMM_TIMEOUT); a rank on another host may have failed");
    }
  }
}

Status MpiTransport::wait(std::vector<MPI_Request>& requests, const std::string& what) {
  // MPI_Testall tells only whether everything completed: "moved" is never
  // seen, so past a millisecond the loop yields every 64 polls.
  return poll_until(
      [&](bool* done, bool*) {
        int complete = 0;
        int code =
            MPI_Testall(int(requests.size()), requests.data(), &complete, MPI_STATUSES_IGNORE);
        *done = complete != 0;
        return code;
      },
      what);
}

// The ring: the elements are cut into size() blocks (the first count % size()
// one element longer), each block into segments of segment_bytes_. Each
// segment j is an all_reduce of its own (a "chain"): 2 (p - 1) stages, in
// stage s < p - 1 (reduce-scatter) rank r sends block r - s to rank r + 1 and
// receives block r - s - 1 from rank r - 1, which it reduces into its own;
// then (all-gather, s = p - 1 + k) it sends block r + 1 - k and receives block
// r - k, final. A stage ends when both of its messages have; up to kWindow
// chains are under way at once, so the reduction of one segment overlaps the
// transfer of the next. Each block is reduced once, in one order, and copied
// to the others: the result is bitwise the same on every rank. AVG divides
// the block a rank finished before the all-gather (a 1/p of the elements).
Status MpiTransport::ring_all_reduce(const HostOp& op, const std::string& what) {
  constexpr int kWindow = 8;
  const int p = size_;
  const int r = rank_;
  const uint64_t n = op.count;
  const uint64_t es = dtype_size(op.dtype);
  const uint64_t base = n / uint64_t(p);
  const uint64_t extra = n % uint64_t(p);
  const uint64_t seg = std::max<uint64_t>(1, segment_bytes_ / es);
  const uint64_t largest = base + (extra > 0 ? 1 : 0);
  const uint64_t segments = (largest + seg - 1) / seg;
  const int stages = 2 * (p - 1);
  const bool in_place = op.send == op.recv;
  const bool avg = op.op == OAR_REDUCE_OP_AVG;
  const char* send = static_cast<const char*>(op.send);
  char* recv = static_cast<char*>(op.recv);
  const MPI_Datatype type = mpi_type(op.dtype);
  const MPI_Op reduction = mpi_op(op.dtype, op.op);
  const int window = int(std::min<uint64_t>(kWindow, segments));
  const int next = (r + 1) % p;
  const int prev = (r + p - 1) % p;

  std::lock_guard<std::mutex> lock(ring_mutex_);
  char* scratch = nullptr;
  if (in_place) {
    if (ring_scratch_.size() < uint64_t(window) * seg * es) ring_scratch_.resize(window * seg * es);
    scratch = ring_scratch_.data();
  }
  auto wrap = [p](int64_t b) { return int((b % p + p) % p); };
  // Segment j of block b: its byte offset and element count.
  auto piece = [&](int b, uint64_t j, uint64_t* at, uint64_t* len) {
    const uint64_t block = base + (uint64_t(b) < extra ? 1 : 0);
    const uint64_t first = uint64_t(b) * base + std::min<uint64_t>(uint64_t(b), extra);
    const uint64_t lo = std::min(block, j * seg);
    *len = std::min(block, lo + seg) - lo;
    *at = (first + lo) * es;
  };
  struct Chain {
    uint64_t segment = 0;
    int stage = 0;
    bool active = false;
  };
  std::vector<Chain> chains(window);
  std::vector<MPI_Request> requests(2 * size_t(window), MPI_REQUEST_NULL);
  std::vector<int> indices(requests.size());
  uint64_t next_segment = 0;
  int active = 0;

  // Which blocks stage s sends and receives.
  auto blocks = [&](int s, int* sent, int* received) {
    if (s < p - 1) {
      *sent = wrap(int64_t(r) - s);
      *received = wrap(int64_t(r) - s - 1);
    } else {
      const int k = s - (p - 1);
      *sent = wrap(int64_t(r) + 1 - k);
      *received = wrap(int64_t(r) - k);
    }
  };
  auto post = [&](int slot) {
    const Chain& c = chains[slot];
    int sb = 0;
    int rb = 0;
    blocks(c.stage, &sb, &rb);
    uint64_t sat = 0, slen = 0, rat = 0, rlen = 0;
    piece(sb, c.segment, &sat, &slen);
    piece(rb, c.segment, &rat, &rlen);
    const bool reducing = c.stage < p - 1;
    const int tag = int((c.segment * uint64_t(stages) + uint64_t(c.stage)) % uint64_t(tag_ub_));
    int code = MPI_SUCCESS;
    if (rlen > 0) {
      char* into = reducing && in_place ? scratch + uint64_t(slot) * seg * es : recv + rat;
      code = MPI_Irecv(into, int(rlen), type, prev, tag, ring_comm_, &requests[2 * slot]);
    }
    if (code == MPI_SUCCESS && slen > 0) {
      const char* from = (c.stage == 0 ? send : recv) + sat;
      code = MPI_Isend(from, int(slen), type, next, tag, ring_comm_, &requests[2 * slot + 1]);
    }
    return code;
  };
  // The stage of |slot| is complete: reduce what it received, go on.
  auto finish = [&](int slot) {
    Chain& c = chains[slot];
    if (c.stage < p - 1) {
      int sb = 0;
      int rb = 0;
      blocks(c.stage, &sb, &rb);
      uint64_t at = 0, len = 0;
      piece(rb, c.segment, &at, &len);
      if (len > 0) {
        // inout = in op inout; every reduction is commutative, so either order.
        const void* in = in_place ? scratch + uint64_t(slot) * seg * es : send + at;
        MPI_Reduce_local(in, recv + at, int(len), type, reduction);
        if (avg && c.stage == p - 2) divide_host(op.dtype, recv + at, len, p);
      }
    }
    ++c.stage;
  };
  // Posts the stages of |slot| until one has a message pending; starts the
  // next segment in the slot when its chain is done.
  auto settle = [&](int slot) {
    for (;;) {
      Chain& c = chains[slot];
      if (!c.active) {
        if (next_segment == segments) return int(MPI_SUCCESS);
        c = Chain{next_segment++, 0, true};
        ++active;
      } else {
        if (requests[2 * slot] != MPI_REQUEST_NULL || requests[2 * slot + 1] != MPI_REQUEST_NULL) {
          return int(MPI_SUCCESS);
        }
        finish(slot);
        if (c.stage == stages) {
          c.active = false;
          --active;
          continue;
        }
      }
      int code = post(slot);
      if (code != MPI_SUCCESS) return code;
    }
  };
  // A stage just posted has its requests pending (or none: settle goes on).
  for (int slot = 0; slot < window; ++slot) {
    int code = settle(slot);
    if (code != MPI_SUCCESS) {
      failed_ = true;
      return Status(OAR_STATUS_UNAVAILABLE, what + ": MPI refused it: " + mpi_error(code));
    }
  }
  return poll_until(
      [&](bool* done, bool* moved) {
        if (active == 0) {
          *done = true;
          return int(MPI_SUCCESS);
        }
        int completed = 0;
        int code = MPI_Testsome(int(requests.size()), requests.data(), &completed, indices.data(),
                                MPI_STATUSES_IGNORE);
        if (code != MPI_SUCCESS) return code;
        if (completed == MPI_UNDEFINED || completed == 0) return int(MPI_SUCCESS);
        *moved = true;
        for (int i = 0; i < completed; ++i) {
          code = settle(indices[i] / 2);
          if (code != MPI_SUCCESS) return code;
        }
        *done = active == 0;
        return int(MPI_SUCCESS);
      },
      what);
}

namespace {

// What every rank must agree on for one collective.
struct Signature {
  uint8_t kind = 0xff;  // 0xff: no collective in the run
  uint8_t code = 0;
  uint8_t bits = 0;
  uint8_t collectives = 0;  // how many the run holds (saturating)
  int32_t op = 0;
  int32_t root = 0;
  uint32_t reserved = 0;  // no padding: signatures are compared bytewise
  uint64_t total = 0;
};
static_assert(sizeof(Signature) == 24, "Signature has padding");

bool reduces(CollKind kind) {
  return kind == CollKind::kAllReduce || kind == CollKind::kReduce ||
         kind == CollKind::kReduceScatter;
}

std::string describe(const Signature& s) {
  if (s.kind == 0xff) return "no collective";
  const CollKind kind = CollKind(s.kind);
  std::string text = std::string(coll_name(kind)) + " of " + std::to_string(s.total) +
                     " elements of " + dtype_name(DLDataType{s.code, s.bits, 1});
  if (reduces(kind)) {
    static const char* names[] = {"sum", "prod", "max", "min", "avg"};
    text += std::string(" (") + (s.op >= 0 && s.op < 5 ? names[s.op] : "?") + ")";
  }
  if (kind == CollKind::kBroadcast || kind == CollKind::kReduce) {
    text += " with root " + std::to_string(s.root);
  }
  if (s.collectives > 1) text += " and " + std::to_string(s.collectives - 1) + " more";
  return text;
}

}  // namespace

Status MpiTransport::check_agreement(const std::vector<HostOp>& ops) {
  Signature mine;
  for (const HostOp& op : ops) {
    // Later pieces of an operation are checked with its first: ranks cut
    // operations alike, but may run a piece per step or all in one.
    if (op.kind == CollKind::kSend || op.kind == CollKind::kRecv || !op.opens) continue;
    if (mine.collectives < 0xff) ++mine.collectives;
    if (mine.collectives > 1) continue;
    mine.kind = uint8_t(op.kind);
    mine.code = op.dtype.code;
    mine.bits = op.dtype.bits;
    mine.op = reduces(op.kind) ? op.op : 0;
    mine.root = op.kind == CollKind::kBroadcast || op.kind == CollKind::kReduce ? op.peer : 0;
    mine.total = op.total;
  }
  if (mine.collectives == 0) return Status();  // every rank skips alike
  std::vector<Signature> all(size_);
  MPI_Request request = MPI_REQUEST_NULL;
  int code = MPI_Iallgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine),
                            MPI_BYTE, comm_, &request);
  if (code != MPI_SUCCESS) {
    failed_ = true;
    return Status(OAR_STATUS_UNAVAILABLE, "validation: MPI refused the check: " + mpi_error(code));
  }
  std::vector<MPI_Request> requests{request};
  OAR_RETURN_IF_ERROR(wait(requests, "validation of the ranks' arguments"));
  for (int32_t r = 1; r < size_; ++r) {
    if (std::memcmp(&all[r], &all[0], sizeof(Signature)) != 0) {
      return Status(OAR_STATUS_INVALID_ARGUMENT, "validation: the ranks disagree: rank " +
                                                     std::to_string(r) + " issued " +
                                                     describe(all[r]) + ", rank 0 " +
                                                     describe(all[0]) + "; nothing was exchanged");
    }
  }
  return Status();
}

Status MpiTransport::run(const std::vector<HostOp>& ops) {
  if (failed_ || aborted_.load()) {
    return Status(
        aborted_.load() ? OAR_STATUS_ABORTED : OAR_STATUS_UNAVAILABLE,
        aborted_.load() ? "the communicator was aborted" : "the communicator failed earlier");
  }
  if (checking_) OAR_RETURN_IF_ERROR(check_agreement(ops));
  if (ops.size() == 1 && ops[0].kind == CollKind::kAllReduce && ops[0].count > 0 && size_ > 1 &&
      ring_mode_ != 2 &&
      (ring_mode_ == 1 || ops[0].count * dtype_size(ops[0].dtype) >= kRingMinBytes)) {
    return ring_all_reduce(ops[0], "all_reduce");
  }
  std::vector<MPI_Request> requests;
  std::vector<std::vector<char>> temporaries;
  // After the wait: copies out of temporaries, and AVG's division.
  struct Finish {
    const char* from = nullptr;
    void* to = nullptr;
    uint64_t bytes = 0;
    const HostOp* avg = nullptr;
  };
  std::vector<Finish> finish;
  // What a wait reports: "all_reduce", or "a group of send, recv".
  std::string what;
  for (const HostOp& op : ops) {
    std::string name = coll_name(op.kind);
    if (what.find(name) == std::string::npos) what += (what.empty() ? "" : ", ") + name;
    if (op.count == 0) continue;  // every rank has the same count: nothing to meet for
    const int count = int(op.count);
    const MPI_Datatype type = mpi_type(op.dtype);
    const uint64_t bytes = op.count * dtype_size(op.dtype);
    MPI_Request request = MPI_REQUEST_NULL;
    int code = MPI_SUCCESS;
    bool averaged = op.op == OAR_REDUCE_OP_AVG;
    switch (op.kind) {
      case CollKind::kAllReduce:
        code = MPI_Iallreduce(op.send == op.recv ? MPI_IN_PLACE : op.send, op.recv, count, type,
                              mpi_op(op.dtype, op.op), comm_, &request);
        break;
      case CollKind::kBroadcast:
        if (rank_ == op.peer && op.send != op.recv) std::memcpy(op.recv, op.send, bytes);
        code = MPI_Ibcast(op.recv, count, type, op.peer, comm_, &request);
        averaged = false;
        break;
      case CollKind::kReduce:
        code = MPI_Ireduce(rank_ == op.peer && op.send == op.recv ? MPI_IN_PLACE : op.send, op.recv,
                           count, type, mpi_op(op.dtype, op.op), op.peer, comm_, &request);
        averaged = averaged && rank_ == op.peer;
        break;
      case CollKind::kAllGather:
        code = MPI_Iallgather(
            op.send == static_cast<char*>(op.recv) + rank_ * bytes ? MPI_IN_PLACE : op.send, count,
            type, op.recv, count, type, comm_, &request);
        averaged = false;
        break;
      case CollKind::kReduceScatter: {
        const char* send = static_cast<const char*>(op.send);
        const char* recv = static_cast<const char*>(op.recv);
        void* target = op.recv;
        if (recv + bytes > send && recv < send + size_ * bytes) {  // in place: via a temporary
          temporaries.emplace_back(bytes);
          target = temporaries.back().data();
          finish.push_back(Finish{temporaries.back().data(), op.recv, bytes, nullptr});
        }
        code = MPI_Ireduce_scatter_block(op.send, target, count, type, mpi_op(op.dtype, op.op),
                                         comm_, &request);
        break;
      }
      case CollKind::kAllToAll: {
        const void* send = op.send;
        if (op.send == op.recv) {  // in place: send from a copy
          temporaries.emplace_back(static_cast<const char*>(op.send),
                                   static_cast<const char*>(op.send) + size_ * bytes);
          send = temporaries.back().data();
        }
        code = MPI_Ialltoall(send, count, type, op.recv, count, type, comm_, &request);
        averaged = false;
        break;
      }
      case CollKind::kSend:
        code = MPI_Isend(op.send, count, type, op.peer, op.tag, comm_, &request);
        averaged = false;
        break;
      case CollKind::kRecv:
        code = MPI_Irecv(op.recv, count, type, op.peer, op.tag, comm_, &request);
        averaged = false;
        break;
    }
    if (code != MPI_SUCCESS) {
      failed_ = true;
      return Status(OAR_STATUS_UNAVAILABLE,
                    std::string(coll_name(op.kind)) + ": MPI refused it: " + mpi_error(code));
    }
    requests.push_back(request);
    if (averaged) finish.push_back(Finish{nullptr, nullptr, 0, &op});
  }
  if (requests.empty()) return Status();
  OAR_RETURN_IF_ERROR(wait(requests, what));
  for (const Finish& f : finish) {
    if (f.from != nullptr) std::memcpy(f.to, f.from, f.bytes);
    if (f.avg != nullptr) divide_host(f.avg->dtype, f.avg->recv, f.avg->count, size_);
  }
  return Status();
}

}  // namespace oar::detail
