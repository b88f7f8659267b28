/* OAR C ABI: memory. Device memory is addressed as (allocation, byte offset):
 * the core never does arithmetic on an oar_memory_t, so every runtime's buffer
 * objects fit.
 *
 * Copies and fills are stream ordered: they run after the work submitted to the
 * stream before them. For a copy whose host side is not memory the plugin
 * allocated, the caller keeps the host buffer alive and unchanged until the
 * copy is complete (observed by stream_synchronize, stream_query or an event);
 * the plugin may not assume such a buffer is pinned. Ranges are checked by the
 * plugin where it can: [offset, offset + size) must lie inside the allocation. */
#ifndef OAR_MEMORY_H_
#define OAR_MEMORY_H_

#include <stddef.h>
#include <stdint.h>

#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Allocates |size| bytes of memory of |kind| (one oar_memory_kind_e bit the
 * device lists in memory_kinds) on |device|, aligned to min_alignment. A zero
 * |size| yields a valid allocation that holds no bytes.
 *
 * Ownership: the caller owns |out_memory| and frees it with memory_free.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_RESOURCE_EXHAUSTED when memory runs out (the core then
 * releases its caches and retries); OAR_STATUS_INVALID_ARGUMENT for a kind the
 * device lacks or |size| above max_allocation_size. */
typedef oar_status_t (*oar_memory_allocate_fn)(oar_device_t device, uint64_t size, uint32_t kind,
                                               oar_memory_t* out_memory);

/* Frees |memory| at once. The caller guarantees that no pending work uses it.
 *
 * Ownership: releases |memory|.
 * Threading: thread-safe; no other call may use |memory| concurrently.
 * Errors: none beyond the global rules. */
typedef oar_status_t (*oar_memory_free_fn)(oar_device_t device, oar_memory_t memory);

/* Writes the host address of a host-visible allocation (HOST_PINNED or
 * UNIFIED) to |out_address|. Required if the device lists such kinds.
 *
 * Ownership: borrows |memory|; the address is valid until it is freed.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_INVALID_ARGUMENT if |memory| is not host-visible. */
typedef oar_status_t (*oar_memory_host_address_fn)(oar_device_t device, oar_memory_t memory,
                                                   void** out_address);

/* Copies |size| bytes from host |src| to (|dst|, |dst_offset|) on |stream|.
 *
 * Ownership: borrows all; |src| must stay valid until the copy completes.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_OUT_OF_RANGE if the range leaves the allocation. */
typedef oar_status_t (*oar_memory_copy_h2d_fn)(oar_stream_t stream, oar_memory_t dst,
                                               uint64_t dst_offset, const void* src, uint64_t size);

/* Copies |size| bytes from (|src|, |src_offset|) to host |dst| on |stream|.
 *
 * Ownership: borrows all; |dst| must stay valid until the copy completes.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_OUT_OF_RANGE if the range leaves the allocation. */
typedef oar_status_t (*oar_memory_copy_d2h_fn)(oar_stream_t stream, void* dst, oar_memory_t src,
                                               uint64_t src_offset, uint64_t size);

/* Copies |size| bytes between two allocations of the stream's device; the
 * ranges may overlap only if they are identical.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_OUT_OF_RANGE if a range leaves its allocation. */
typedef oar_status_t (*oar_memory_copy_d2d_fn)(oar_stream_t stream, oar_memory_t dst,
                                               uint64_t dst_offset, oar_memory_t src,
                                               uint64_t src_offset, uint64_t size);

/* Copies |size| bytes from (|src|, |src_offset|) on |src_device| to (|dst|,
 * |dst_offset|) on the device of |stream|, ordered on |stream|. Optional;
 * requires OAR_DEVICE_FEATURE_PEER_ACCESS on both devices.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_UNIMPLEMENTED if the two devices cannot reach each other. */
typedef oar_status_t (*oar_memory_copy_peer_fn)(oar_stream_t stream, oar_memory_t dst,
                                                uint64_t dst_offset, oar_device_t src_device,
                                                oar_memory_t src, uint64_t src_offset,
                                                uint64_t size);

/* Sets |size| bytes at (|dst|, |dst_offset|) to |value| on |stream|.
 *
 * Ownership: borrows all.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_OUT_OF_RANGE if the range leaves the allocation. */
typedef oar_status_t (*oar_memory_fill_fn)(oar_stream_t stream, oar_memory_t dst,
                                           uint64_t dst_offset, uint8_t value, uint64_t size);

#ifdef __cplusplus
}
#endif

#endif /* OAR_MEMORY_H_ */
