// Paddle's xccl_* slots (C_DeviceInterface's collectives) served by
// oar::Communicator (docs/runtime.md, "Collectives"): the host-staged engine
// over MPI, one Paddle process per rank. Paddle makes the unique id on rank 0
// and hands it to the others through its TCP store; Communicator::create then
// meets the ranks inside MPI_COMM_WORLD, so the ranks of a Paddle job must be
// the processes of one MPI job (mpirun). Every operation is queued on
// Paddle's stream like a kernel. runtime.cc registers the slots through
// register_xccl (adapter.h); without liboar_comm (no MPI) there are none.
#include <dlfcn.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>

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
    *comm = reinterpret_cast<C_CCLComm>(a.add_comm(std::move(handle)));
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
