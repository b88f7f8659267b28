/* OAR C ABI: streams, ordered queues of work on one device.
 *
 * Semantics: work on one stream runs in submission order; across streams only
 * events order work. An error in asynchronous work puts the stream into a
 * failed state: the next stream_synchronize / stream_query on it, and the
 * synchronize / query of every event recorded on it afterwards, return that
 * error. A failed stream stays failed until destroyed. */
#ifndef OAR_STREAM_H_
#define OAR_STREAM_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum oar_stream_priority_e {
  OAR_STREAM_PRIORITY_NORMAL = 0,
  OAR_STREAM_PRIORITY_HIGH = 1,
  OAR_STREAM_PRIORITY_LOW = 2,
  OAR_STREAM_PRIORITY_MAX_ENUM = 0x7fffffff
} oar_stream_priority_e;

typedef struct oar_stream_desc_t {
  size_t struct_size; /* OAR_STREAM_DESC_STRUCT_SIZE */
  int32_t priority;   /* oar_stream_priority_e; a hint */
  uint32_t flags;     /* reserved, 0 */
} oar_stream_desc_t;
#define OAR_STREAM_DESC_STRUCT_SIZE OAR_STRUCT_SIZE(oar_stream_desc_t, flags)
OAR_CHECK_STRUCT_SIZE(oar_stream_desc_t, flags, OAR_STREAM_DESC_STRUCT_SIZE);

/* Called by the plugin after all work submitted to the stream before it has
 * completed. |status| is OAR_STATUS_OK or the stream's error. It must not call
 * back into the plugin's stream of origin synchronously (no synchronize). */
typedef void (*oar_host_callback_fn)(void* user_data, oar_status_t status);

/* Creates a stream on |device|. |desc| may be NULL for defaults.
 *
 * Ownership: the caller owns |out_stream|; borrows |device| and |desc|.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_RESOURCE_EXHAUSTED if no more streams can be created. */
typedef oar_status_t (*oar_stream_create_fn)(oar_device_t device, const oar_stream_desc_t* desc,
                                             oar_stream_t* out_stream);

/* Waits for the stream's pending work, then destroys it. Events recorded on
 * it stay valid (and complete) until they are destroyed themselves.
 *
 * Ownership: releases |stream|.
 * Threading: no other call may use |stream| concurrently.
 * Errors: none beyond the global rules; a pending asynchronous error is dropped. */
typedef oar_status_t (*oar_stream_destroy_fn)(oar_stream_t stream);

/* Blocks until all work submitted to |stream| is complete.
 *
 * Ownership: borrows |stream|.
 * Threading: thread-safe.
 * Errors: the stream's asynchronous error, if any (see the file comment). */
typedef oar_status_t (*oar_stream_synchronize_fn)(oar_stream_t stream);

/* Writes true to |out_idle| if all work submitted to |stream| is complete.
 *
 * Ownership: borrows |stream|.
 * Threading: thread-safe.
 * Errors: the stream's asynchronous error, if any. */
typedef oar_status_t (*oar_stream_query_fn)(oar_stream_t stream, bool* out_idle);

/* Makes later work on |stream| wait until |event| completes; the host does not
 * block. |event| may belong to another stream of the same device.
 *
 * Ownership: borrows |stream| and |event|; |event| may be destroyed right after.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_FAILED_PRECONDITION if |event| was never recorded. */
typedef oar_status_t (*oar_stream_wait_event_fn)(oar_stream_t stream, oar_event_t event);

/* Calls |callback(user_data, status)| on a plugin thread once all work
 * submitted to |stream| before this call is complete.
 *
 * Ownership: borrows |stream|; |user_data| stays the caller's.
 * Threading: thread-compatible per stream; the callback runs on any thread.
 * Errors: OAR_STATUS_INVALID_ARGUMENT if |callback| is NULL. */
typedef oar_status_t (*oar_stream_add_host_callback_fn)(oar_stream_t stream,
                                                        oar_host_callback_fn callback,
                                                        void* user_data);

#ifdef __cplusplus
}
#endif

#endif /* OAR_STREAM_H_ */
