// oar::Communicator: argument checks, groups, and the choice of engine.
#include "oar/communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <exception>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <utility>

#include "core/collective/engine.h"
#include "core/collective/local_transport.h"
#include "core/collective/mpi_transport.h"
#include "core/collective/native_engine.h"
#include "core/collective/staged_engine.h"
#include "oar/buffer.hpp"
#include "oar/device.hpp"
#include "oar/dtype.hpp"
#include "oar/error.hpp"
#include "oar/stream.hpp"

namespace oar {
namespace {

constexpr char kMagic[8] = {'O', 'A', 'R', 'C', 'O', 'M', 'M', '1'};
constexpr uint8_t kEngineStagedMpi = 1;
constexpr size_t kTokenOffset = 16;
constexpr size_t kTokenSize = 16;

[[noreturn]] void fail(oar_status_t code, const std::string& message) {
  throw Error(code, message);
}

void throw_if(const Status& status) {
  if (!status.ok()) throw Error(status.code(), status.message());
}

// The operations of the calling thread's open group.
struct PendingOp {
  detail::CommEngine* engine;
  Stream* stream;
  detail::CollOp op;
};
thread_local int group_depth = 0;
thread_local std::vector<PendingOp> group_ops;

}  // namespace

Communicator::Communicator() = default;
Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;
Communicator::Communicator(std::unique_ptr<detail::CommEngine> engine)
    : engine_(std::move(engine)) {}

CommUniqueId Communicator::unique_id() {
  CommUniqueId id;
  std::memcpy(id.bytes.data(), kMagic, sizeof kMagic);
  id.bytes[8] = kEngineStagedMpi;
  std::random_device random;
  for (size_t i = 0; i < kTokenSize; i += 4) {
    uint32_t word = random();
    std::memcpy(id.bytes.data() + kTokenOffset + i, &word, 4);
  }
  return id;
}

Communicator Communicator::create(Device& device, int32_t nranks, int32_t rank,
                                  const CommUniqueId& id) {
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    fail(OAR_STATUS_INVALID_ARGUMENT, "Communicator::create: rank " + std::to_string(rank) +
                                          " of " + std::to_string(nranks) + " ranks");
  }
  if (std::memcmp(id.bytes.data(), kMagic, sizeof kMagic) != 0 || id.bytes[8] != kEngineStagedMpi) {
    fail(OAR_STATUS_INVALID_ARGUMENT,
         "Communicator::create: the id was not made by Communicator::unique_id()");
  }
  throw_if(detail::ensure_mpi());
  uint32_t color = 0;
  std::memcpy(&color, id.bytes.data() + kTokenOffset, sizeof color);
  MPI_Comm comm = MPI_COMM_NULL;
  int code = MPI_Comm_split(MPI_COMM_WORLD, int(color & 0x7fffffff), rank, &comm);
  if (code != MPI_SUCCESS)
    fail(OAR_STATUS_UNAVAILABLE, "Communicator::create: MPI_Comm_split failed");
  // Every member must hold the same id and a distinct rank.
  struct Member {
    uint8_t token[kTokenSize];
    int32_t rank;
    int32_t nranks;
  };
  Member mine{};
  std::memcpy(mine.token, id.bytes.data() + kTokenOffset, kTokenSize);
  mine.rank = rank;
  mine.nranks = nranks;
  int size = 0;
  MPI_Comm_size(comm, &size);
  std::vector<Member> all(size);
  MPI_Allgather(&mine, int(sizeof mine), MPI_BYTE, all.data(), int(sizeof mine), MPI_BYTE, comm);
  std::string problem;
  if (size != nranks) {
    problem =
        std::to_string(size) + " processes joined with this id, not " + std::to_string(nranks);
  }
  for (int i = 0; i < size && problem.empty(); ++i) {
    if (std::memcmp(all[i].token, mine.token, kTokenSize) != 0) {
      problem = "another id hashes alike; make a new one";
    } else if (all[i].rank != i || all[i].nranks != nranks) {
      problem = "ranks disagree: the process that joined as " + std::to_string(i) + " said rank " +
                std::to_string(all[i].rank) + " of " + std::to_string(all[i].nranks);
    }
  }
  if (!problem.empty()) {
    MPI_Comm_free(&comm);
    fail(OAR_STATUS_UNAVAILABLE, "Communicator::create: " + problem +
                                     " (every process of the MPI job calls create with the same "
                                     "id and its own rank)");
  }
  auto transport = detail::MpiTransport::create(comm);
  throw_if(transport.status());
  return Communicator(detail::make_staged_engine(device, std::move(transport).value()));
}

Communicator Communicator::from_mpi(Device& device, MPI_Comm comm) {
  throw_if(detail::ensure_mpi());
  MPI_Comm own = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &own) != MPI_SUCCESS) {
    fail(OAR_STATUS_UNAVAILABLE, "Communicator::from_mpi: MPI_Comm_dup failed");
  }
  auto transport = detail::MpiTransport::create(own);
  throw_if(transport.status());
  return Communicator(detail::make_staged_engine(device, std::move(transport).value()));
}

namespace {

// OAR_COMM_NATIVE=0: create_local ignores the plugins' collective slots and
// takes the core's staged engine (tests of both paths on one plugin).
bool native_allowed() {
  const char* text = secure_getenv("OAR_COMM_NATIVE");
  return text == nullptr || std::strcmp(text, "0") != 0;
}

bool native_possible(const std::vector<Device*>& devices) {
  for (Device* device : devices) {
    if (&device->plugin() != &devices[0]->plugin() ||
        !device->has_feature(OAR_DEVICE_FEATURE_COLLECTIVES)) {
      return false;
    }
  }
  return true;
}

// Staged engines for |devices| over |inner| (null: this process alone),
// built on a thread each: each engine's creation is a step all of them join.
std::vector<std::unique_ptr<detail::CommEngine>> staged_local(
    const std::vector<Device*>& devices, std::unique_ptr<detail::Transport> inner,
    const char* operation) {
  if (devices.empty()) fail(OAR_STATUS_INVALID_ARGUMENT, std::string(operation) + ": no devices");
  for (size_t i = 0; i < devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (devices[i] == devices[j]) {
        fail(OAR_STATUS_INVALID_ARGUMENT, std::string(operation) + ": " + devices[i]->name() +
                                              " is listed twice (one rank per device)");
      }
    }
  }
  auto transports = detail::make_local_transports(int32_t(devices.size()), std::move(inner));
  std::vector<std::unique_ptr<detail::CommEngine>> engines(devices.size());
  std::vector<std::exception_ptr> errors(devices.size());
  {
    std::vector<std::thread> threads;
    for (size_t i = 0; i < devices.size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          engines[i] = detail::make_staged_engine(*devices[i], std::move(transports[i]));
        } catch (...) {
          errors[i] = std::current_exception();
        }
      });
    }
    for (std::thread& thread : threads) thread.join();
  }
  for (auto& error : errors) {
    if (error) std::rethrow_exception(error);
  }
  return engines;
}

}  // namespace

std::vector<Communicator> Communicator::create_local(const std::vector<Device*>& devices) {
  if (devices.empty()) fail(OAR_STATUS_INVALID_ARGUMENT, "create_local: no devices");
  if (native_allowed() && native_possible(devices)) {
    std::vector<Communicator> comms;
    for (auto& engine : detail::make_native_engines(devices)) {
      comms.push_back(Communicator(std::move(engine)));
    }
    return comms;
  }
  std::vector<Communicator> comms;
  for (auto& engine : staged_local(devices, nullptr, "create_local")) {
    comms.push_back(Communicator(std::move(engine)));
  }
  return comms;
}

std::vector<Communicator> Communicator::from_mpi(const std::vector<Device*>& devices,
                                                 MPI_Comm comm) {
  throw_if(detail::ensure_mpi());
  MPI_Comm own = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &own) != MPI_SUCCESS) {
    fail(OAR_STATUS_UNAVAILABLE, "Communicator::from_mpi: MPI_Comm_dup failed");
  }
  auto transport = detail::MpiTransport::create(own);
  throw_if(transport.status());
  std::vector<Communicator> comms;
  for (auto& engine :
       staged_local(devices, std::move(transport).value(), "Communicator::from_mpi")) {
    comms.push_back(Communicator(std::move(engine)));
  }
  return comms;
}

detail::CommEngine& Communicator::live(const char* operation) const {
  if (!engine_) {
    fail(OAR_STATUS_FAILED_PRECONDITION,
         std::string("Communicator::") + operation +
             ": empty communicator (default-constructed or moved from)");
  }
  Status error = engine_->error();
  if (!error.ok()) {
    throw Error(error.code(), std::string("Communicator::") + operation + ": " + error.message());
  }
  return *engine_;
}

int32_t Communicator::rank() const { return engine_ ? engine_->rank() : -1; }
int32_t Communicator::size() const { return engine_ ? engine_->size() : 0; }
const char* Communicator::engine_name() const { return engine_ ? engine_->name() : ""; }

Device& Communicator::device() const { return live("device").device(); }

namespace {

uint64_t checked_bytes(uint64_t count, uint64_t element, uint64_t blocks, const char* operation) {
  if (element != 0 && count > UINT64_MAX / element / blocks) {
    fail(OAR_STATUS_OUT_OF_RANGE,
         std::string("Communicator::") + operation + ": the element count overflows 64-bit sizes");
  }
  return count * element * blocks;
}

void check_buffer(const BufferRef& ref, uint64_t bytes, Device& device, const char* operation,
                  const char* side) {
  const Buffer& buffer = *ref.buffer;
  std::string where = std::string("Communicator::") + operation + ": " + side;
  if (!buffer.valid()) fail(OAR_STATUS_INVALID_ARGUMENT, where + " is an empty buffer");
  if (&buffer.device() != &device) {
    fail(OAR_STATUS_INVALID_ARGUMENT,
         where + " is on " + buffer.device().name() + ", the communicator on " + device.name());
  }
  if (ref.offset > buffer.size() || bytes > buffer.size() - ref.offset) {
    fail(OAR_STATUS_OUT_OF_RANGE, where + ": bytes [" + std::to_string(ref.offset) + ", " +
                                      std::to_string(ref.offset + bytes) + ") leave a buffer of " +
                                      std::to_string(buffer.size()) + " bytes");
  }
}

// Checks one operation and submits it, or keeps it for group_end.
void issue(detail::CommEngine& engine, Stream& stream, detail::CollKind kind, const BufferRef* send,
           const BufferRef* recv, uint64_t count, DLDataType dtype, int32_t op, int32_t peer) {
  const char* name = detail::coll_name(kind);
  Device& device = engine.device();
  if (&stream.device() != &device) {
    fail(OAR_STATUS_INVALID_ARGUMENT, std::string("Communicator::") + name + ": the stream is on " +
                                          stream.device().name() + ", the communicator on " +
                                          device.name());
  }
  if (dtype.lanes != 1 || dtype.bits == 0 || dtype.bits % 8 != 0) {
    fail(OAR_STATUS_INVALID_ARGUMENT, std::string("Communicator::") + name + ": dtype " +
                                          dtype_name(dtype) +
                                          " is not a whole number of bytes with one lane");
  }
  const bool reduces = kind == detail::CollKind::kAllReduce || kind == detail::CollKind::kReduce ||
                       kind == detail::CollKind::kReduceScatter;
  if (reduces && (op < OAR_REDUCE_OP_SUM || op > OAR_REDUCE_OP_AVG)) {
    fail(OAR_STATUS_INVALID_ARGUMENT, std::string("Communicator::") + name + ": reduction " +
                                          std::to_string(op) + " is not one of oar_reduce_op_e");
  }
  if (reduces && !detail::reducible(dtype)) {
    fail(OAR_STATUS_INVALID_ARGUMENT, std::string("Communicator::") + name + ": cannot reduce " +
                                          dtype_name(dtype) +
                                          " (f16, bf16, f32, f64, i8, u8, i32, i64 reduce)");
  }
  const int32_t ranks = engine.size();
  const bool rooted = kind == detail::CollKind::kBroadcast || kind == detail::CollKind::kReduce ||
                      kind == detail::CollKind::kSend || kind == detail::CollKind::kRecv;
  if (rooted && (peer < 0 || peer >= ranks)) {
    fail(OAR_STATUS_INVALID_ARGUMENT,
         std::string("Communicator::") + name + ": " +
             (kind == detail::CollKind::kSend || kind == detail::CollKind::kRecv ? "peer "
                                                                                 : "root ") +
             std::to_string(peer) + " is not a rank of 0.." + std::to_string(ranks - 1));
  }
  const uint64_t es = dtype_size(dtype);
  const uint64_t send_blocks =
      kind == detail::CollKind::kReduceScatter || kind == detail::CollKind::kAllToAll ? ranks : 1;
  const uint64_t recv_blocks =
      kind == detail::CollKind::kAllGather || kind == detail::CollKind::kAllToAll ? ranks : 1;
  const int32_t rank = engine.rank();
  // The sides this rank uses: broadcast reads send on the root only, reduce
  // writes recv on the root only.
  if (kind == detail::CollKind::kBroadcast && rank != peer) send = nullptr;
  if (kind == detail::CollKind::kReduce && rank != peer) recv = nullptr;
  detail::CollOp coll;
  coll.kind = kind;
  coll.count = count;
  coll.dtype = dtype;
  coll.op = op;
  coll.peer = peer;
  if (send != nullptr) {
    check_buffer(*send, checked_bytes(count, es, send_blocks, name), device, name, "send");
    coll.send = send->buffer;
    coll.send_offset = send->offset;
  }
  if (recv != nullptr) {
    check_buffer(*recv, checked_bytes(count, es, recv_blocks, name), device, name, "recv");
    coll.recv = recv->buffer;
    coll.recv_offset = recv->offset;
  }
  if (group_depth > 0) {
    group_ops.push_back(PendingOp{&engine, &stream, coll});
    return;
  }
  engine.submit({coll}, stream);
}

}  // namespace

void Communicator::all_reduce(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype,
                              ReduceOp op, Stream& stream) {
  issue(live("all_reduce"), stream, detail::CollKind::kAllReduce, &send, &recv, count, dtype,
        int32_t(op), 0);
}

void Communicator::broadcast(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype,
                             int32_t root, Stream& stream) {
  issue(live("broadcast"), stream, detail::CollKind::kBroadcast, &send, &recv, count, dtype, 0,
        root);
}

void Communicator::reduce(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype,
                          ReduceOp op, int32_t root, Stream& stream) {
  issue(live("reduce"), stream, detail::CollKind::kReduce, &send, &recv, count, dtype, int32_t(op),
        root);
}

void Communicator::all_gather(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype,
                              Stream& stream) {
  issue(live("all_gather"), stream, detail::CollKind::kAllGather, &send, &recv, count, dtype, 0, 0);
}

void Communicator::reduce_scatter(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype,
                                  ReduceOp op, Stream& stream) {
  issue(live("reduce_scatter"), stream, detail::CollKind::kReduceScatter, &send, &recv, count,
        dtype, int32_t(op), 0);
}

void Communicator::all_to_all(BufferRef send, BufferRef recv, uint64_t count, DLDataType dtype,
                              Stream& stream) {
  issue(live("all_to_all"), stream, detail::CollKind::kAllToAll, &send, &recv, count, dtype, 0, 0);
}

void Communicator::send(BufferRef send, uint64_t count, DLDataType dtype, int32_t peer,
                        Stream& stream) {
  issue(live("send"), stream, detail::CollKind::kSend, &send, nullptr, count, dtype, 0, peer);
}

void Communicator::recv(BufferRef recv, uint64_t count, DLDataType dtype, int32_t peer,
                        Stream& stream) {
  issue(live("recv"), stream, detail::CollKind::kRecv, nullptr, &recv, count, dtype, 0, peer);
}

void Communicator::group_begin() { ++group_depth; }

void Communicator::group_end() {
  if (group_depth == 0) {
    fail(OAR_STATUS_FAILED_PRECONDITION, "Communicator::group_end without group_begin");
  }
  if (--group_depth > 0) return;
  std::vector<PendingOp> ops = std::move(group_ops);
  group_ops.clear();
  // One submission per (communicator, stream), in the order they were issued.
  std::vector<std::pair<std::pair<detail::CommEngine*, Stream*>, std::vector<detail::CollOp>>>
      batches;
  for (const PendingOp& pending : ops) {
    auto key = std::make_pair(pending.engine, pending.stream);
    auto it = std::find_if(batches.begin(), batches.end(),
                           [&](const auto& batch) { return batch.first == key; });
    if (it == batches.end()) {
      batches.emplace_back(key, std::vector<detail::CollOp>{});
      it = batches.end() - 1;
    }
    it->second.push_back(pending.op);
  }
  std::exception_ptr first;
  for (auto& [key, batch] : batches) {
    try {
      key.first->submit(batch, *key.second);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
}

void Communicator::synchronize(Stream& stream) {
  detail::CommEngine& engine = live("synchronize");
  stream.synchronize();
  Status error = engine.error();
  if (!error.ok()) throw Error(error.code(), "Communicator::synchronize: " + error.message());
}

void Communicator::check() const { (void)live("check"); }

void Communicator::abort() {
  if (engine_) engine_->abort();
}

}  // namespace oar
