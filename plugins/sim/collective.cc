// The sim plugin's collective slots; see collective.h.
#include "collective.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "oar/sdk/kernel.hpp"

namespace {

constexpr size_t kIdSize = 16;

// The ranks of one communicator and where their operations meet.
struct Group {
  explicit Group(int32_t nranks) : nranks(nranks), members(nranks, false) {}
  const int32_t nranks;
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<bool> members;
  int32_t joined = 0;
  bool aborted = false;

  // One collective, matched across ranks by its sequence number.
  struct Meeting {
    std::vector<const char*> send;
    int32_t arrived = 0;
    int32_t read = 0;  // ranks done reading the others' buffers
    int32_t left = 0;
  };
  std::map<uint64_t, Meeting> meetings;

  // send/recv: messages from rank a to rank b, in order.
  struct Message {
    const char* data;
    uint64_t bytes;
    bool taken = false;
  };
  std::map<std::pair<int32_t, int32_t>, std::deque<std::shared_ptr<Message>>> mail;

  // Waits on |lock| until |ready|, or throws ABORTED.
  template <typename Ready>
  void wait(std::unique_lock<std::mutex>& lock, Ready ready) {
    changed.wait(lock, [&] { return aborted || ready(); });
    oar::sdk::require(!aborted, OAR_STATUS_ABORTED, "the communicator was aborted");
  }
};

// The registry of communicators being created, by id.
std::mutex registry_mutex;
std::map<std::string, std::weak_ptr<Group>> registry;

}  // namespace

struct oar_comm_s {
  std::shared_ptr<Group> group;
  int32_t rank = 0;
  oar_device_t device = nullptr;
  uint64_t next_sequence = 0;  // of the next collective this rank issues
};

namespace oar::sim {

enum class Kind {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kSend,
  kRecv
};

struct SimCollectivePlugin::Op {
  Kind kind = Kind::kAllReduce;
  oar_comm_t comm = nullptr;
  oar_stream_t stream = nullptr;
  const char* send = nullptr;  // device addresses, checked
  char* recv = nullptr;
  uint64_t count = 0;
  DLDataType dtype{};
  int32_t op = 0;
  int32_t peer = 0;  // root or peer
  uint64_t sequence = 0;
  // What the task uses: the group outlives a comm destroyed while the task
  // is pending.
  std::shared_ptr<Group> group;
  int32_t rank = 0;
};

namespace {

template <typename T>
void reduce_typed(int32_t op, const std::vector<const char*>& inputs, uint64_t offset,
                  uint64_t count, int32_t nranks, char* out) {
  using C = oar::sdk::compute_t<T>;
  for (uint64_t i = 0; i < count; ++i) {
    C value = oar::sdk::load(reinterpret_cast<const T*>(inputs[0] + offset) + i);
    for (size_t r = 1; r < inputs.size(); ++r) {
      C other = oar::sdk::load(reinterpret_cast<const T*>(inputs[r] + offset) + i);
      switch (op) {
        case OAR_REDUCE_OP_PROD:
          value = C(value * other);
          break;
        case OAR_REDUCE_OP_MAX:
          value = std::max(value, other);
          break;
        case OAR_REDUCE_OP_MIN:
          value = std::min(value, other);
          break;
        default:
          value = C(value + other);
      }
    }
    if (op == OAR_REDUCE_OP_AVG) value = C(value / C(nranks));
    oar::sdk::store(reinterpret_cast<T*>(out) + i, value);
  }
}

// out[i] = op over ranks of inputs[r][offset + i]; false for a dtype it lacks.
bool reduce(DLDataType t, int32_t op, const std::vector<const char*>& inputs, uint64_t offset,
            uint64_t count, int32_t nranks, char* out) {
  using oar::operator==;
  if (t == oar::dtype::f32)
    return reduce_typed<float>(op, inputs, offset, count, nranks, out), true;
  if (t == oar::dtype::f64)
    return reduce_typed<double>(op, inputs, offset, count, nranks, out), true;
  if (t == oar::dtype::i32)
    return reduce_typed<int32_t>(op, inputs, offset, count, nranks, out), true;
  if (t == oar::dtype::i64)
    return reduce_typed<int64_t>(op, inputs, offset, count, nranks, out), true;
  if (t == oar::dtype::i8)
    return reduce_typed<int8_t>(op, inputs, offset, count, nranks, out), true;
  if (t == oar::dtype::u8)
    return reduce_typed<uint8_t>(op, inputs, offset, count, nranks, out), true;
  if (t == oar::dtype::f16) {
    return reduce_typed<oar::sdk::half>(op, inputs, offset, count, nranks, out), true;
  }
  if (t == oar::dtype::bf16) {
    return reduce_typed<oar::sdk::bfloat16>(op, inputs, offset, count, nranks, out), true;
  }
  return false;
}

bool reduces(Kind kind) {
  return kind == Kind::kAllReduce || kind == Kind::kReduce || kind == Kind::kReduceScatter;
}

// Runs collective |op| on its stream's worker: publish the send buffer, wait
// for every rank, compute this rank's output from the peers' buffers into a
// temporary, wait until every rank has read, then write the output.
void run_collective(const SimCollectivePlugin::Op& op) {
  Group& group = *op.group;
  const int32_t n = group.nranks;
  const int32_t rank = op.rank;
  const uint64_t bytes = op.count * oar::dtype_size(op.dtype);
  std::unique_lock<std::mutex> lock(group.mutex);
  Group::Meeting& meeting = group.meetings[op.sequence];
  if (meeting.send.empty()) meeting.send.assign(n, nullptr);
  meeting.send[rank] = op.send;
  ++meeting.arrived;
  group.changed.notify_all();
  group.wait(lock, [&] { return meeting.arrived == n; });
  std::vector<const char*> send = meeting.send;
  lock.unlock();

  std::vector<char> out;
  bool writes = op.recv != nullptr;
  switch (op.kind) {
    case Kind::kAllReduce:
    case Kind::kReduce:
      if (writes) {
        out.resize(bytes);
        reduce(op.dtype, op.op, send, 0, op.count, n, out.data());
      }
      break;
    case Kind::kReduceScatter:
      out.resize(bytes);
      reduce(op.dtype, op.op, send, uint64_t(rank) * bytes, op.count, n, out.data());
      break;
    case Kind::kBroadcast:
      out.assign(send[op.peer], send[op.peer] + bytes);
      break;
    case Kind::kAllGather:
      out.resize(bytes * n);
      for (int32_t r = 0; r < n; ++r) std::memcpy(out.data() + r * bytes, send[r], bytes);
      break;
    case Kind::kAllToAll:
      out.resize(bytes * n);
      for (int32_t r = 0; r < n; ++r) {
        std::memcpy(out.data() + r * bytes, send[r] + uint64_t(rank) * bytes, bytes);
      }
      break;
    default:
      break;
  }

  lock.lock();
  ++meeting.read;
  group.changed.notify_all();
  group.wait(lock, [&] { return meeting.read == n; });
  lock.unlock();
  if (writes && !out.empty()) std::memcpy(op.recv, out.data(), out.size());
  lock.lock();
  if (++meeting.left == n) group.meetings.erase(op.sequence);
}

// Runs the operations of one stream's group (or one operation): sends are
// posted first, then the collectives in order, then the receives; the task
// ends once the peers took every message sent.
void run_ops(const std::vector<SimCollectivePlugin::Op>& ops) {
  std::vector<std::shared_ptr<Group::Message>> posted;
  for (const auto& op : ops) {
    if (op.kind != Kind::kSend) continue;
    Group& group = *op.group;
    std::lock_guard<std::mutex> lock(group.mutex);
    auto message = std::make_shared<Group::Message>(
        Group::Message{op.send, op.count * oar::dtype_size(op.dtype)});
    group.mail[{op.rank, op.peer}].push_back(message);
    posted.push_back(message);
    group.changed.notify_all();
  }
  for (const auto& op : ops) {
    if (op.kind != Kind::kSend && op.kind != Kind::kRecv) run_collective(op);
  }
  for (const auto& op : ops) {
    if (op.kind != Kind::kRecv) continue;
    Group& group = *op.group;
    std::unique_lock<std::mutex> lock(group.mutex);
    auto& queue = group.mail[{op.peer, op.rank}];
    group.wait(lock, [&] { return !queue.empty(); });
    std::shared_ptr<Group::Message> message = queue.front();
    queue.pop_front();
    const uint64_t bytes = op.count * oar::dtype_size(op.dtype);
    if (message->bytes != bytes) {
      message->taken = true;
      group.changed.notify_all();
      throw oar::sdk::Error(OAR_STATUS_INVALID_ARGUMENT,
                            "comm_recv: rank " + std::to_string(op.peer) + " sent " +
                                std::to_string(message->bytes) + " bytes, rank " +
                                std::to_string(op.rank) + " expected " + std::to_string(bytes));
    }
    lock.unlock();
    std::memcpy(op.recv, message->data, bytes);
    lock.lock();
    message->taken = true;
    group.changed.notify_all();
  }
  for (const auto& op : ops) {
    if (op.kind != Kind::kSend) continue;
    Group& group = *op.group;
    std::unique_lock<std::mutex> lock(group.mutex);
    group.wait(lock, [&] {
      return std::all_of(posted.begin(), posted.end(), [](const auto& m) { return m->taken; });
    });
    break;
  }
}

thread_local int group_depth = 0;
thread_local std::vector<SimCollectivePlugin::Op> group_ops;

void submit_ops(oar_stream_t stream, std::vector<SimCollectivePlugin::Op> ops) {
  uint64_t bytes = 0;
  for (const auto& op : ops) bytes += op.count * oar::dtype_size(op.dtype);
  // A copy task: the device memory is accessible while it runs.
  stream->queue->submit([ops = std::move(ops)] { run_ops(ops); },
                        {oar::sdk::TaskInfo::kCopy, bytes});
}

}  // namespace

SimCollectivePlugin::SimCollectivePlugin() {
  properties_.features |= OAR_DEVICE_FEATURE_COLLECTIVES;
}

void SimCollectivePlugin::comm_unique_id_size(size_t* out_size) {
  oar::cpu::require_not_null(out_size, "out_size");
  *out_size = kIdSize;
}

void SimCollectivePlugin::comm_get_unique_id(void* out_id, size_t size) {
  oar::cpu::require_not_null(out_id, "out_id");
  oar::sdk::require(size == kIdSize, OAR_STATUS_INVALID_ARGUMENT,
                    "comm_get_unique_id: size " + std::to_string(size) + ", the id has " +
                        std::to_string(kIdSize) + " bytes");
  std::random_device random;
  for (size_t i = 0; i < kIdSize; i += 4) {
    uint32_t word = random();
    std::memcpy(static_cast<char*>(out_id) + i, &word, 4);
  }
}

void SimCollectivePlugin::comm_create(oar_device_t device, int32_t nranks, int32_t rank,
                                      const void* id, size_t id_size, oar_comm_t* out_comm) {
  oar::cpu::require_not_null(device, "device");
  oar::cpu::require_not_null(id, "id");
  oar::cpu::require_not_null(out_comm, "out_comm");
  oar::sdk::require(id_size == kIdSize, OAR_STATUS_INVALID_ARGUMENT,
                    "comm_create: the id has " + std::to_string(kIdSize) + " bytes, not " +
                        std::to_string(id_size));
  oar::sdk::require(nranks >= 1 && rank >= 0 && rank < nranks, OAR_STATUS_INVALID_ARGUMENT,
                    "comm_create: rank " + std::to_string(rank) + " of " + std::to_string(nranks));
  std::string key(static_cast<const char*>(id), id_size);
  std::shared_ptr<Group> group;
  {
    std::lock_guard<std::mutex> lock(registry_mutex);
    group = registry[key].lock();
    if (!group) {
      group = std::make_shared<Group>(nranks);
      registry[key] = group;
    }
  }
  std::unique_lock<std::mutex> lock(group->mutex);
  oar::sdk::require(group->nranks == nranks, OAR_STATUS_INVALID_ARGUMENT,
                    "comm_create: " + std::to_string(nranks) + " ranks, but rank 0.. joined with " +
                        std::to_string(group->nranks));
  oar::sdk::require(!group->members[rank], OAR_STATUS_INVALID_ARGUMENT,
                    "comm_create: rank " + std::to_string(rank) + " joined twice");
  group->members[rank] = true;
  ++group->joined;
  group->changed.notify_all();
  group->changed.wait(lock, [&] { return group->joined == nranks; });
  lock.unlock();
  {
    std::lock_guard<std::mutex> registry_lock(registry_mutex);
    auto it = registry.find(key);
    if (it != registry.end() && it->second.lock() == group) registry.erase(it);
  }
  auto comm = std::make_unique<oar_comm_s>();
  comm->group = std::move(group);
  comm->rank = rank;
  comm->device = device;
  *out_comm = comm.release();
}

void SimCollectivePlugin::comm_destroy(oar_comm_t comm) { delete comm; }

void SimCollectivePlugin::comm_abort(oar_comm_t comm) {
  oar::cpu::require_not_null(comm, "comm");
  std::lock_guard<std::mutex> lock(comm->group->mutex);
  comm->group->aborted = true;
  comm->group->changed.notify_all();
}

char* SimCollectivePlugin::device_range(oar_device_t device, oar_memory_t memory, uint64_t offset,
                                        uint64_t bytes, const char* what) const {
  oar::sdk::require(memory != nullptr, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + ": memory handle is NULL");
  oar::cpu::AllocationTable::Allocation allocation{};
  oar::sdk::require(allocations_.find(memory, &allocation), OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " is not sim device memory");
  oar::sdk::require(allocation.device == device, OAR_STATUS_INVALID_ARGUMENT,
                    std::string(what) + " is memory of another sim device than the stream's");
  allocations_.check_range(memory, offset, bytes, what);
  return oar::cpu::address(memory, offset);
}

void SimCollectivePlugin::issue(Op op) {
  oar::cpu::require_not_null(op.comm, "comm");
  oar::cpu::require_not_null(op.stream, "stream");
  Group& group = *op.comm->group;
  {
    std::lock_guard<std::mutex> lock(group.mutex);
    oar::sdk::require(!group.aborted, OAR_STATUS_ABORTED, "the communicator was aborted");
  }
  oar::sdk::require(op.stream->device == op.comm->device, OAR_STATUS_INVALID_ARGUMENT,
                    "the stream is not on the communicator's device");
  oar::sdk::require(op.dtype.lanes == 1 && op.dtype.bits % 8 == 0 && op.dtype.bits > 0,
                    OAR_STATUS_INVALID_ARGUMENT, "the dtype is not whole bytes with one lane");
  if (reduces(op.kind)) {
    char probe[8];
    std::vector<const char*> none;
    oar::sdk::require(op.op >= OAR_REDUCE_OP_SUM && op.op <= OAR_REDUCE_OP_AVG,
                      OAR_STATUS_INVALID_ARGUMENT, "unknown reduction " + std::to_string(op.op));
    oar::sdk::require(reduce(op.dtype, op.op, none, 0, 0, 1, probe), OAR_STATUS_INVALID_ARGUMENT,
                      "this dtype does not reduce");
  }
  const bool rooted = op.kind == Kind::kBroadcast || op.kind == Kind::kReduce ||
                      op.kind == Kind::kSend || op.kind == Kind::kRecv;
  oar::sdk::require(!rooted || (op.peer >= 0 && op.peer < group.nranks),
                    OAR_STATUS_INVALID_ARGUMENT,
                    "root or peer " + std::to_string(op.peer) + " is not a rank");
  // Nothing to meet for: every rank passes the same count, so all skip alike.
  if (op.count == 0) return;
  if (op.kind != Kind::kSend && op.kind != Kind::kRecv) op.sequence = op.comm->next_sequence++;
  op.group = op.comm->group;
  op.rank = op.comm->rank;
  if (group_depth > 0) {
    group_ops.push_back(op);
    return;
  }
  submit_ops(op.stream, {op});
}

namespace {
uint64_t blocks_in(Kind kind, int32_t n) {
  return kind == Kind::kReduceScatter || kind == Kind::kAllToAll ? uint64_t(n) : 1;
}
uint64_t blocks_out(Kind kind, int32_t n) {
  return kind == Kind::kAllGather || kind == Kind::kAllToAll ? uint64_t(n) : 1;
}
}  // namespace

#define OAR_SIM_COLLECTIVE(slot, kind_value, reads, writes, op_value, peer_value)                  \
  do {                                                                                             \
    oar::cpu::require_not_null(comm, "comm");                                                      \
    oar::cpu::require_not_null(stream, "stream");                                                  \
    Op o;                                                                                          \
    o.kind = kind_value;                                                                           \
    o.comm = comm;                                                                                 \
    o.stream = stream;                                                                             \
    o.count = count;                                                                               \
    o.dtype = dtype;                                                                               \
    o.op = op_value;                                                                               \
    o.peer = peer_value;                                                                           \
    const uint64_t es = oar::dtype_size(dtype);                                                    \
    const int32_t n = comm->group->nranks;                                                         \
    if (reads) {                                                                                   \
      o.send = device_range(stream->device, send, send_offset, count * es * blocks_in(o.kind, n),  \
                            #slot " send");                                                        \
    }                                                                                              \
    if (writes) {                                                                                  \
      o.recv = device_range(stream->device, recv, recv_offset, count * es * blocks_out(o.kind, n), \
                            #slot " recv");                                                        \
    }                                                                                              \
    issue(o);                                                                                      \
  } while (false)

void SimCollectivePlugin::comm_all_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                          uint64_t send_offset, oar_memory_t recv,
                                          uint64_t recv_offset, uint64_t count, DLDataType dtype,
                                          int32_t op) {
  OAR_SIM_COLLECTIVE(comm_all_reduce, Kind::kAllReduce, true, true, op, 0);
}

void SimCollectivePlugin::comm_broadcast(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                         uint64_t send_offset, oar_memory_t recv,
                                         uint64_t recv_offset, uint64_t count, DLDataType dtype,
                                         int32_t root) {
  OAR_SIM_COLLECTIVE(comm_broadcast, Kind::kBroadcast, comm->rank == root, true, 0, root);
}

void SimCollectivePlugin::comm_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                      uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                                      uint64_t count, DLDataType dtype, int32_t op, int32_t root) {
  OAR_SIM_COLLECTIVE(comm_reduce, Kind::kReduce, true, comm->rank == root, op, root);
}

void SimCollectivePlugin::comm_all_gather(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                          uint64_t send_offset, oar_memory_t recv,
                                          uint64_t recv_offset, uint64_t count, DLDataType dtype) {
  OAR_SIM_COLLECTIVE(comm_all_gather, Kind::kAllGather, true, true, 0, 0);
}

void SimCollectivePlugin::comm_reduce_scatter(oar_comm_t comm, oar_stream_t stream,
                                              oar_memory_t send, uint64_t send_offset,
                                              oar_memory_t recv, uint64_t recv_offset,
                                              uint64_t count, DLDataType dtype, int32_t op) {
  OAR_SIM_COLLECTIVE(comm_reduce_scatter, Kind::kReduceScatter, true, true, op, 0);
}

void SimCollectivePlugin::comm_all_to_all(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                          uint64_t send_offset, oar_memory_t recv,
                                          uint64_t recv_offset, uint64_t count, DLDataType dtype) {
  OAR_SIM_COLLECTIVE(comm_all_to_all, Kind::kAllToAll, true, true, 0, 0);
}

void SimCollectivePlugin::comm_send(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                    uint64_t send_offset, uint64_t count, DLDataType dtype,
                                    int32_t peer) {
  oar_memory_t recv = nullptr;
  uint64_t recv_offset = 0;
  OAR_SIM_COLLECTIVE(comm_send, Kind::kSend, true, false, 0, peer);
  (void)recv;
  (void)recv_offset;
}

void SimCollectivePlugin::comm_recv(oar_comm_t comm, oar_stream_t stream, oar_memory_t recv,
                                    uint64_t recv_offset, uint64_t count, DLDataType dtype,
                                    int32_t peer) {
  oar_memory_t send = nullptr;
  uint64_t send_offset = 0;
  OAR_SIM_COLLECTIVE(comm_recv, Kind::kRecv, false, true, 0, peer);
  (void)send;
  (void)send_offset;
}

#undef OAR_SIM_COLLECTIVE

void SimCollectivePlugin::comm_group_begin() { ++group_depth; }

void SimCollectivePlugin::comm_group_end() {
  oar::sdk::require(group_depth > 0, OAR_STATUS_FAILED_PRECONDITION,
                    "comm_group_end without comm_group_begin");
  if (--group_depth > 0) return;
  std::vector<Op> ops = std::move(group_ops);
  group_ops.clear();
  // One task per stream, its operations in the order they were issued.
  std::vector<std::pair<oar_stream_t, std::vector<Op>>> batches;
  for (const Op& op : ops) {
    auto it = std::find_if(batches.begin(), batches.end(),
                           [&](const auto& batch) { return batch.first == op.stream; });
    if (it == batches.end()) {
      batches.emplace_back(op.stream, std::vector<Op>{});
      it = batches.end() - 1;
    }
    it->second.push_back(op);
  }
  for (auto& [stream, batch] : batches) submit_ops(stream, std::move(batch));
}

}  // namespace oar::sim
