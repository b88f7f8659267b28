/* OAR C ABI: collectives. Declared in ABI 1.0 so that the table's layout is
 * fixed; every slot is optional and a device says it implements them with
 * OAR_DEVICE_FEATURE_COLLECTIVES. All operations are stream ordered: they are
 * submitted to |stream| and complete asynchronously like any other work.
 * Buffers are (memory, offset) pairs of the stream's device. */
#ifndef OAR_COLLECTIVE_H_
#define OAR_COLLECTIVE_H_

#include <stddef.h>
#include <stdint.h>

#include "dlpack/dlpack.h"
#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum oar_reduce_op_e {
  OAR_REDUCE_OP_SUM = 0,
  OAR_REDUCE_OP_PROD = 1,
  OAR_REDUCE_OP_MAX = 2,
  OAR_REDUCE_OP_MIN = 3,
  OAR_REDUCE_OP_AVG = 4,
  OAR_REDUCE_OP_MAX_ENUM = 0x7fffffff
} oar_reduce_op_e;

/* Writes the size in bytes of a unique id to |out_size|.
 *
 * Ownership: none.
 * Threading: thread-safe.
 * Errors: none beyond the global rules. */
typedef oar_status_t (*oar_comm_unique_id_size_fn)(size_t* out_size);

/* Writes a fresh unique id (|size| bytes) that rank 0 shares with the others
 * out of band (MPI broadcast, a file, a store).
 *
 * Ownership: borrows |out_id|.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_INVALID_ARGUMENT if |size| is not unique_id_size. */
typedef oar_status_t (*oar_comm_get_unique_id_fn)(void* out_id, size_t size);

/* Creates this process's member |rank| of an |nranks| communicator on
 * |device|. Blocks until every rank has joined.
 *
 * Ownership: the caller owns |out_comm|; borrows |id|.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a bad rank; OAR_STATUS_UNAVAILABLE
 * if peers cannot be reached. */
typedef oar_status_t (*oar_comm_create_fn)(oar_device_t device, int32_t nranks, int32_t rank,
                                           const void* id, size_t id_size, oar_comm_t* out_comm);

/* Destroys |comm| after its pending operations complete.
 *
 * Ownership: releases |comm|.
 * Threading: no other call may use |comm| concurrently.
 * Errors: none beyond the global rules. */
typedef oar_status_t (*oar_comm_destroy_fn)(oar_comm_t comm);

/* Aborts |comm|: pending operations fail with OAR_STATUS_ABORTED and no call
 * on it blocks afterwards. The caller still destroys it.
 *
 * Ownership: borrows |comm|.
 * Threading: thread-safe, callable while another thread is blocked in |comm|.
 * Errors: none beyond the global rules. */
typedef oar_status_t (*oar_comm_abort_fn)(oar_comm_t comm);

/* Reduces |count| elements of |dtype| across ranks with |op|; every rank
 * receives the result.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a dtype or op the plugin lacks. */
typedef oar_status_t (*oar_comm_all_reduce_fn)(oar_comm_t comm, oar_stream_t stream,
                                               oar_memory_t send, uint64_t send_offset,
                                               oar_memory_t recv, uint64_t recv_offset,
                                               uint64_t count, DLDataType dtype, int32_t op);

/* Copies |count| elements from |root|'s buffer to every rank's |recv|.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a bad root. */
typedef oar_status_t (*oar_comm_broadcast_fn)(oar_comm_t comm, oar_stream_t stream,
                                              oar_memory_t send, uint64_t send_offset,
                                              oar_memory_t recv, uint64_t recv_offset,
                                              uint64_t count, DLDataType dtype, int32_t root);

/* Reduces |count| elements with |op|; only |root| receives the result.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a bad root, dtype or op. */
typedef oar_status_t (*oar_comm_reduce_fn)(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                           uint64_t send_offset, oar_memory_t recv,
                                           uint64_t recv_offset, uint64_t count, DLDataType dtype,
                                           int32_t op, int32_t root);

/* Gathers |count| elements from every rank into |recv| (nranks * count),
 * ordered by rank.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a dtype the plugin lacks. */
typedef oar_status_t (*oar_comm_all_gather_fn)(oar_comm_t comm, oar_stream_t stream,
                                               oar_memory_t send, uint64_t send_offset,
                                               oar_memory_t recv, uint64_t recv_offset,
                                               uint64_t count, DLDataType dtype);

/* Reduces nranks * |count| elements with |op| and leaves block |rank| of the
 * result (|count| elements) on each rank.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a dtype or op the plugin lacks. */
typedef oar_status_t (*oar_comm_reduce_scatter_fn)(oar_comm_t comm, oar_stream_t stream,
                                                   oar_memory_t send, uint64_t send_offset,
                                                   oar_memory_t recv, uint64_t recv_offset,
                                                   uint64_t count, DLDataType dtype, int32_t op);

/* Sends block i (|count| elements) of |send| to rank i and receives rank i's
 * block into block i of |recv|.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a dtype the plugin lacks. */
typedef oar_status_t (*oar_comm_all_to_all_fn)(oar_comm_t comm, oar_stream_t stream,
                                               oar_memory_t send, uint64_t send_offset,
                                               oar_memory_t recv, uint64_t recv_offset,
                                               uint64_t count, DLDataType dtype);

/* Sends |count| elements to rank |peer|, matched by a recv there.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a bad peer. */
typedef oar_status_t (*oar_comm_send_fn)(oar_comm_t comm, oar_stream_t stream, oar_memory_t send,
                                         uint64_t send_offset, uint64_t count, DLDataType dtype,
                                         int32_t peer);

/* Receives |count| elements from rank |peer|.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream and per communicator.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for a bad peer. */
typedef oar_status_t (*oar_comm_recv_fn)(oar_comm_t comm, oar_stream_t stream, oar_memory_t recv,
                                         uint64_t recv_offset, uint64_t count, DLDataType dtype,
                                         int32_t peer);

/* Opens a group: collective calls until group_end are fused and may be issued
 * in any order across ranks (needed for send/recv pairs).
 *
 * Ownership: none.
 * Threading: per calling thread.
 * Errors: OAR_STATUS_FAILED_PRECONDITION on nesting deeper than the plugin allows. */
typedef oar_status_t (*oar_comm_group_begin_fn)(void);

/* Closes the group opened by group_begin and submits its operations.
 *
 * Ownership: none.
 * Threading: per calling thread.
 * Errors: OAR_STATUS_FAILED_PRECONDITION without a matching group_begin. */
typedef oar_status_t (*oar_comm_group_end_fn)(void);

#ifdef __cplusplus
}
#endif

#endif /* OAR_COLLECTIVE_H_ */
