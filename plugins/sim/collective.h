// The sim plugin's own collective slots (include/oar/collective.h): the
// devices of one process form communicators, one device per rank, and meet
// in the plugin. Each operation is a task on the caller's stream that waits
// for the same operation on every other rank's stream, then reads the peers'
// device memory directly (the plugin's devices share one address space, as
// peer copies do) and writes only its own rank's output. So the plugin path
// of the ABI is exercised and certified next to the core's staged engine.
//
// Limits: ranks are devices of this process (comm_create blocks until every
// rank joined, so the ranks are created from different threads); one rank
// per device and stream; every rank issues the same operations in the same
// order. An operation whose peers never come waits until comm_abort.
#pragma once

#include "sim.h"

namespace oar::sim {

class SimCollectivePlugin : public SimPlugin {
 public:
  SimCollectivePlugin();

  void comm_unique_id_size(size_t* out_size);
  void comm_get_unique_id(void* out_id, size_t size);
  void comm_create(oar_device_t device, int32_t nranks, int32_t rank, const void* id,
                   size_t id_size, oar_comm_t* out_comm);
  void comm_destroy(oar_comm_t comm);
  void comm_abort(oar_comm_t comm);
  void comm_all_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                       uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                       uint64_t count, DLDataType dtype, int32_t op);
  void comm_broadcast(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                      oar_memory_t recv, uint64_t recv_offset, uint64_t count, DLDataType dtype,
                      int32_t root);
  void comm_reduce(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                   oar_memory_t recv, uint64_t recv_offset, uint64_t count, DLDataType dtype,
                   int32_t op, int32_t root);
  void comm_all_gather(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                       uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                       uint64_t count, DLDataType dtype);
  void comm_reduce_scatter(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                           uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                           uint64_t count, DLDataType dtype, int32_t op);
  void comm_all_to_all(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                       uint64_t send_offset, oar_memory_t recv, uint64_t recv_offset,
                       uint64_t count, DLDataType dtype);
  void comm_send(oar_comm_t comm, oar_stream_t stream, oar_memory_t send, uint64_t send_offset,
                 uint64_t count, DLDataType dtype, int32_t peer);
  void comm_recv(oar_comm_t comm, oar_stream_t stream, oar_memory_t recv, uint64_t recv_offset,
                 uint64_t count, DLDataType dtype, int32_t peer);
  void comm_group_begin();
  void comm_group_end();

  // One operation as issued, its buffers checked (collective.cc).
  struct Op;

 private:
  // Checks |op| and submits it to its stream, or keeps it for group_end.
  void issue(Op op);
  // Throws unless [offset, offset + bytes) of |memory| is memory of |device|.
  char* device_range(oar_device_t device, oar_memory_t memory, uint64_t offset, uint64_t bytes,
                     const char* what) const;
};

}  // namespace oar::sim
