// Paddle's xccl_* slots (C_DeviceInterface's collectives) served by
// oar::Communicator (docs/runtime.md, "Collectives"): the host-staged engine
// over MPI, one Paddle process per rank. Paddle makes the unique id on rank 0
// and hands it to the others through its TCP store; Communicator::create then
// meets the ranks inside MPI_COMM_WORLD, so the ranks of a Paddle job must be
// the processes of one MPI job (mpirun). Every operation is queued on
// Paddle's stream like a kernel. runtime.cc registers the slots through
// register_xccl (adapter.h); without liboar_comm (no MPI) there are none.
#include <dlfcn.h>

#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adapter.h"
#include "paddle/phi/backends/device_ext.h"
#if defined(OAR_PADDLE_XCCL)
#include <mpi.h>
#endif

namespace oar_paddle {

#if defined(OAR_PADDLE_XCCL)

// ---------------------------------------------------------------- state

CommHandle* Adapter::add_comm(std::unique_ptr<CommHandle> comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  comms_.push_back(std::move(comm));
  comm_count_.fetch_add(1, std::memory_order_relaxed);
  return comms_.back().get();
}

std::unique_ptr<CommHandle> Adapter::remove_comm(CommHandle* comm) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = comms_.begin(); it != comms_.end(); ++it) {
    if (it->get() == comm) {
      std::unique_ptr<CommHandle> found = std::move(*it);
      comms_.erase(it);
      comm_count_.fetch_sub(1, std::memory_order_relaxed);
      return found;
    }
  }
  return nullptr;
}

void Adapter::check_comms(int device) {
  if (comm_count_.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& comm : comms_) {
    if (comm->device == device) comm->comm.check();
  }
}

// ---------------------------------------------------------------- slots

namespace {

Adapter& adapter() {
  Adapter* adapter = Adapter::get();
  if (adapter == nullptr) throw oar::Error(OAR_STATUS_UNAVAILABLE, "OAR did not start");
  return *adapter;
}

DLDataType xccl_dtype(C_DataType type) {
  switch (type) {
    case BOOL:
      return oar::dtype::boolean;
    case UINT8:
      return oar::dtype::u8;
    case UINT16:
      return DLDataType{kDLUInt, 16, 1};
    case UINT32:
      return DLDataType{kDLUInt, 32, 1};
    case UINT64:
      return DLDataType{kDLUInt, 64, 1};
    case INT8:
      return oar::dtype::i8;
    case INT16:
      return oar::dtype::i16;
    case INT32:
      return oar::dtype::i32;
    case INT64:
      return oar::dtype::i64;
    case FLOAT16:
      return oar::dtype::f16;
    case FLOAT32:
      return oar::dtype::f32;
    case FLOAT64:
      return oar::dtype::f64;
    case BFLOAT16:
      return oar::dtype::bf16;
    case COMPLEX64:
      return DLDataType{kDLComplex, 64, 1};
    case COMPLEX128:
      return DLDataType{kDLComplex, 128, 1};
    default:
      break;
  }
  throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                   "Paddle data type " + std::to_string(int(type)) + " has no OAR dtype");
}

oar::ReduceOp xccl_op(C_CCLReduceOp op) {
  switch (op) {
    case SUM:
      return oar::ReduceOp::kSum;
    case AVG:
      return oar::ReduceOp::kAvg;
    case MAX:
      return oar::ReduceOp::kMax;
    case MIN:
      return oar::ReduceOp::kMin;
    case PRODUCT:
      return oar::ReduceOp::kProd;
  }
  throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                   "Paddle reduce op " + std::to_string(int(op)) + " has no OAR reduction");
}

CommHandle& comm_of(C_CCLComm comm) {
  if (comm == nullptr) throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "no communicator");
  auto& handle = *reinterpret_cast<CommHandle*>(comm);
  handle.comm.check();  // an earlier operation's failure (a peer gone, a timeout)
  return handle;
}

oar::Stream& comm_stream(const CommHandle& comm, C_Stream stream) {
  if (stream == nullptr) return adapter().device(comm.device).default_stream();
  return reinterpret_cast<StreamHandle*>(stream)->stream;
}

// |count| elements of |dtype| times |blocks|, in bytes (OUT_OF_RANGE on overflow).
uint64_t xccl_bytes(size_t count, DLDataType dtype, uint64_t blocks) {
  uint64_t element = uint64_t(dtype.bits) / 8;
  if (element != 0 && uint64_t(count) > UINT64_MAX / element / blocks) {
    throw oar::Error(OAR_STATUS_OUT_OF_RANGE, std::to_string(count) + " elements overflow");
  }
  return uint64_t(count) * element * blocks;
}

oar::BufferRef xccl_ref(const void* pointer, uint64_t bytes) {
  DeviceAddress address = resolve(pointer, bytes);
  return oar::BufferRef(*address.range->buffer,
                        uint64_t(reinterpret_cast<uintptr_t>(pointer) - address.range->base));
}

int32_t xccl_rank(size_t rank, const CommHandle& comm, const char* what) {
  if (rank >= size_t(comm.comm.size())) {
    throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, std::string(what) + " " + std::to_string(rank) +
                                                      " is not a rank of 0.." +
                                                      std::to_string(comm.comm.size() - 1));
  }
  return int32_t(rank);
}

// Open MPI loads its components with dlopen and expects libmpi's symbols to
// be global; Paddle opened the adapter (and so libmpi) with local symbols.
void make_mpi_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) != 0 && info.dli_fname != nullptr) {
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
  }
}

C_Status xccl_get_unique_id_size(size_t* size) {
  return guarded("xccl_get_unique_id_size", [&] {
    *size = oar::CommUniqueId{}.bytes.size();
    return C_SUCCESS;
  });
}

C_Status xccl_get_unique_id(C_CCLRootId* unique_id) {
  return guarded("xccl_get_unique_id", [&] {
    oar::CommUniqueId id = oar::Communicator::unique_id();
    if (unique_id == nullptr || unique_id->data == nullptr || unique_id->sz < id.bytes.size()) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                       "the unique id needs " + std::to_string(id.bytes.size()) + " bytes");
    }
    std::memcpy(unique_id->data, id.bytes.data(), id.bytes.size());
    return C_SUCCESS;
  });
}

// "oar-<engine>-<ranks>-<16 hex digits of the id's FNV-1a hash>": every rank
// derives the same name from the id they share, and another id (another
// communicator) gives another name.
std::string comm_name(const oar::Communicator& comm, const oar::CommUniqueId& id) {
  uint64_t hash = 14695981039346656037ull;
  for (uint8_t byte : id.bytes) hash = (hash ^ byte) * 1099511628211ull;
  char text[96];
  std::snprintf(text, sizeof(text), "oar-%s-%d-%016llx", comm.engine_name(), int(comm.size()),
                static_cast<unsigned long long>(hash));
  return text;
}

C_Status xccl_comm_init_rank(size_t nranks, C_CCLRootId* unique_id, size_t rank, C_CCLComm* comm) {
  return guarded("xccl_comm_init_rank", [&] {
    oar::CommUniqueId id;
    if (comm == nullptr || unique_id == nullptr || unique_id->data == nullptr ||
        unique_id->sz != id.bytes.size()) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                       "the unique id is " + std::to_string(unique_id ? unique_id->sz : 0) +
                           " bytes, not an OAR id of " + std::to_string(id.bytes.size()));
    }
    if (nranks == 0 || nranks > size_t(INT32_MAX) || rank >= nranks) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                       "rank " + std::to_string(rank) + " of " + std::to_string(nranks) + " ranks");
    }
    std::memcpy(id.bytes.data(), unique_id->data, id.bytes.size());
    Adapter& a = adapter();
    auto handle = std::make_unique<CommHandle>();
    handle->device = current_device();
    make_mpi_global();
    try {
      handle->comm =
          oar::Communicator::create(a.device(handle->device), int32_t(nranks), int32_t(rank), id);
    } catch (const oar::Error& e) {
      throw oar::Error(e.code(), e.message() +
                                     "; the ranks of a Paddle job on OAR devices must be the "
                                     "processes of one MPI job (mpirun -n " +
                                     std::to_string(nranks) + ", docs/paddle.md)");
    }
    handle->name = comm_name(handle->comm, id);
    *comm = reinterpret_cast<C_CCLComm>(a.add_comm(std::move(handle)));
    return C_SUCCESS;
  });
}

// Paddle's buffer is 128 bytes (ProcessGroupCustom::GetCommName); the name
// is far shorter (comm_name).
C_Status xccl_get_comm_name(C_CCLComm comm, char* name) {
  return guarded("xccl_get_comm_name", [&] {
    if (name == nullptr) throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "no buffer for the name");
    const std::string& text = comm_of(comm).name;
    std::memcpy(name, text.c_str(), text.size() + 1);
    return C_SUCCESS;
  });
}

C_Status xccl_destroy_comm(C_CCLComm comm) {
  return guarded("xccl_destroy_comm", [&] {
    if (Adapter::finalized()) return C_SUCCESS;  // it went with the runtime
    std::unique_ptr<CommHandle> handle = adapter().remove_comm(reinterpret_cast<CommHandle*>(comm));
    if (!handle)
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "destroy of an unknown communicator");
    return C_SUCCESS;  // ~Communicator waits for its pending operations
  });
}

C_Status xccl_all_reduce(void* send_buf, void* recv_buf, size_t count, C_DataType data_type,
                         C_CCLReduceOp op, C_CCLComm comm, C_Stream stream) {
  return guarded("xccl_all_reduce", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    uint64_t bytes = xccl_bytes(count, dtype, 1);
    c.comm.all_reduce(xccl_ref(send_buf, bytes), xccl_ref(recv_buf, bytes), count, dtype,
                      xccl_op(op), comm_stream(c, stream));
    return C_SUCCESS;
  });
}

C_Status xccl_broadcast(void* buf, size_t count, C_DataType data_type, size_t root, C_CCLComm comm,
                        C_Stream stream) {
  return guarded("xccl_broadcast", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    oar::BufferRef ref = xccl_ref(buf, xccl_bytes(count, dtype, 1));
    c.comm.broadcast(ref, ref, count, dtype, xccl_rank(root, c, "root"), comm_stream(c, stream));
    return C_SUCCESS;
  });
}

C_Status xccl_reduce(void* send_buf, void* recv_buf, size_t count, C_DataType data_type,
                     C_CCLReduceOp op, size_t root, C_CCLComm comm, C_Stream stream) {
  return guarded("xccl_reduce", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    uint64_t bytes = xccl_bytes(count, dtype, 1);
    int32_t r = xccl_rank(root, c, "root");
    oar::BufferRef send = xccl_ref(send_buf, bytes);
    // |recv| is written on the root only; other ranks may pass none.
    oar::BufferRef recv =
        recv_buf != nullptr || c.comm.rank() == r ? xccl_ref(recv_buf, bytes) : send;
    c.comm.reduce(send, recv, count, dtype, xccl_op(op), r, comm_stream(c, stream));
    return C_SUCCESS;
  });
}

C_Status xccl_all_gather(void* send_buf, void* recv_buf, size_t count, C_DataType data_type,
                         C_CCLComm comm, C_Stream stream) {
  return guarded("xccl_all_gather", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    c.comm.all_gather(xccl_ref(send_buf, xccl_bytes(count, dtype, 1)),
                      xccl_ref(recv_buf, xccl_bytes(count, dtype, uint64_t(c.comm.size()))), count,
                      dtype, comm_stream(c, stream));
    return C_SUCCESS;
  });
}

C_Status xccl_reduce_scatter(void* send_buf, void* recv_buf, size_t count, C_DataType data_type,
                             C_CCLReduceOp op, C_CCLComm comm, C_Stream stream) {
  return guarded("xccl_reduce_scatter", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    c.comm.reduce_scatter(xccl_ref(send_buf, xccl_bytes(count, dtype, uint64_t(c.comm.size()))),
                          xccl_ref(recv_buf, xccl_bytes(count, dtype, 1)), count, dtype,
                          xccl_op(op), comm_stream(c, stream));
    return C_SUCCESS;
  });
}

C_Status xccl_group_start() {
  return guarded("xccl_group_start", [&] {
    oar::Communicator::group_begin();
    return C_SUCCESS;
  });
}

C_Status xccl_group_end() {
  return guarded("xccl_group_end", [&] {
    oar::Communicator::group_end();
    return C_SUCCESS;
  });
}

// Paddle passes one (pointer, count, dtype) per rank on each side: block i
// of send goes to rank i, block i of recv comes from rank i. The common case,
// equal blocks of one dtype laid end to end in one allocation on both sides
// (the all_to_all kernel, alltoall with even splits), is one
// Communicator::all_to_all. Anything else (alltoall_single's uneven splits)
// is a group of sends and receives, one per other rank, and a copy on the
// stream for the rank's own block.
bool uniform_all_to_all(const void** send_buf, const size_t* send_count,
                        const C_DataType* send_dtype, void** recv_buf, const size_t* recv_count,
                        const C_DataType* recv_dtype, size_t nranks) {
  const uint64_t block = xccl_bytes(send_count[0], xccl_dtype(send_dtype[0]), 1);
  for (size_t i = 0; i < nranks; ++i) {
    if (send_count[i] != send_count[0] || recv_count[i] != send_count[0] ||
        send_dtype[i] != send_dtype[0] || recv_dtype[i] != send_dtype[0] ||
        static_cast<const char*>(send_buf[i]) !=
            static_cast<const char*>(send_buf[0]) + i * block ||
        static_cast<const char*>(recv_buf[i]) !=
            static_cast<const char*>(recv_buf[0]) + i * block) {
      return false;
    }
  }
  return true;
}

C_Status xccl_all_to_all(const void** send_buf, const size_t* send_count,
                         const C_DataType* send_dtype, void** recv_buf, const size_t* recv_count,
                         const C_DataType* recv_dtype, size_t rank, size_t nranks, C_CCLComm comm,
                         C_Stream stream) {
  return guarded("xccl_all_to_all", [&] {
    CommHandle& c = comm_of(comm);
    if (nranks != size_t(c.comm.size()) || rank != size_t(c.comm.rank())) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                       "rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                           ", the communicator's is " + std::to_string(c.comm.rank()) + " of " +
                           std::to_string(c.comm.size()));
    }
    if (send_buf == nullptr || send_count == nullptr || send_dtype == nullptr ||
        recv_buf == nullptr || recv_count == nullptr || recv_dtype == nullptr) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT, "a per-rank array is missing");
    }
    oar::Stream& s = comm_stream(c, stream);
    if (uniform_all_to_all(send_buf, send_count, send_dtype, recv_buf, recv_count, recv_dtype,
                           nranks)) {
      if (send_count[0] == 0) return C_SUCCESS;
      DLDataType dtype = xccl_dtype(send_dtype[0]);
      uint64_t bytes = xccl_bytes(send_count[0], dtype, nranks);
      c.comm.all_to_all(xccl_ref(send_buf[0], bytes), xccl_ref(recv_buf[0], bytes), send_count[0],
                        dtype, s);
      return C_SUCCESS;
    }
    // The own block first: its sizes are checked before anything is sent.
    DLDataType own_send = xccl_dtype(send_dtype[rank]);
    DLDataType own_recv = xccl_dtype(recv_dtype[rank]);
    uint64_t own = xccl_bytes(send_count[rank], own_send, 1);
    if (own != xccl_bytes(recv_count[rank], own_recv, 1)) {
      throw oar::Error(OAR_STATUS_INVALID_ARGUMENT,
                       "rank " + std::to_string(rank) + "'s own block is " + std::to_string(own) +
                           " bytes to send and " +
                           std::to_string(xccl_bytes(recv_count[rank], own_recv, 1)) +
                           " to receive");
    }
    // Every block is resolved and checked before the group, so that a bad
    // one fails this rank before it sends anything.
    struct Block {
      oar::BufferRef ref;
      uint64_t count;
      DLDataType dtype;
      int32_t peer;
    };
    std::vector<Block> sends, recvs;
    for (size_t i = 0; i < nranks; ++i) {
      if (i == rank) continue;
      if (send_count[i] != 0) {
        DLDataType dtype = xccl_dtype(send_dtype[i]);
        sends.push_back(Block{xccl_ref(send_buf[i], xccl_bytes(send_count[i], dtype, 1)),
                              send_count[i], dtype, int32_t(i)});
      }
      if (recv_count[i] != 0) {
        DLDataType dtype = xccl_dtype(recv_dtype[i]);
        recvs.push_back(Block{xccl_ref(recv_buf[i], xccl_bytes(recv_count[i], dtype, 1)),
                              recv_count[i], dtype, int32_t(i)});
      }
    }
    oar::Communicator::group_begin();
    try {
      for (const Block& b : sends) c.comm.send(b.ref, b.count, b.dtype, b.peer, s);
      for (const Block& b : recvs) c.comm.recv(b.ref, b.count, b.dtype, b.peer, s);
    } catch (...) {
      oar::Communicator::group_end();
      throw;
    }
    oar::Communicator::group_end();
    if (own != 0) {
      DeviceAddress from = resolve(send_buf[rank], own);
      DeviceAddress to = resolve(recv_buf[rank], own);
      s.copy(*to.range->buffer,
             uint64_t(reinterpret_cast<uintptr_t>(recv_buf[rank]) - to.range->base),
             *from.range->buffer,
             uint64_t(reinterpret_cast<uintptr_t>(send_buf[rank]) - from.range->base), own);
    }
    return C_SUCCESS;
  });
}

C_Status xccl_send(void* send_buf, size_t count, C_DataType data_type, size_t dest_rank,
                   C_CCLComm comm, C_Stream stream) {
  return guarded("xccl_send", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    c.comm.send(xccl_ref(send_buf, xccl_bytes(count, dtype, 1)), count, dtype,
                xccl_rank(dest_rank, c, "peer"), comm_stream(c, stream));
    return C_SUCCESS;
  });
}

C_Status xccl_recv(void* recv_buf, size_t count, C_DataType data_type, size_t src_rank,
                   C_CCLComm comm, C_Stream stream) {
  return guarded("xccl_recv", [&] {
    if (count == 0) return C_SUCCESS;
    CommHandle& c = comm_of(comm);
    DLDataType dtype = xccl_dtype(data_type);
    c.comm.recv(xccl_ref(recv_buf, xccl_bytes(count, dtype, 1)), count, dtype,
                xccl_rank(src_rank, c, "peer"), comm_stream(c, stream));
    return C_SUCCESS;
  });
}

}  // namespace

#endif  // OAR_PADDLE_XCCL

void register_xccl(C_DeviceInterface* api) {
#if defined(OAR_PADDLE_XCCL)
  api->xccl_get_unique_id_size = xccl_get_unique_id_size;
  api->xccl_get_unique_id = xccl_get_unique_id;
  api->xccl_comm_init_rank = xccl_comm_init_rank;
  api->xccl_destroy_comm = xccl_destroy_comm;
  api->xccl_all_reduce = xccl_all_reduce;
  api->xccl_broadcast = xccl_broadcast;
  api->xccl_reduce = xccl_reduce;
  api->xccl_all_gather = xccl_all_gather;
  api->xccl_reduce_scatter = xccl_reduce_scatter;
  api->xccl_group_start = xccl_group_start;
  api->xccl_group_end = xccl_group_end;
  api->xccl_send = xccl_send;
  api->xccl_recv = xccl_recv;
  api->xccl_all_to_all = xccl_all_to_all;
  api->xccl_get_comm_name = xccl_get_comm_name;
#else
  (void)api;
#endif
}

}  // namespace oar_paddle

// For the adapter's tests: whether the xccl_* slots are served (the adapter
// was built with liboar_comm, i.e. MPI was found).
extern "C" __attribute__((visibility("default"))) int oar_paddle_has_xccl() {
#if defined(OAR_PADDLE_XCCL)
  return 1;
#else
  return 0;
#endif
}
