/* OAR C ABI: events, markers on streams. An event completes when all work
 * submitted to its stream before the record has completed. Recording again
 * moves the marker: queries then refer to the latest record. */
#ifndef OAR_EVENT_H_
#define OAR_EVENT_H_

#include <stdbool.h>
#include <stdint.h>

#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum oar_event_flag_e {
  /* The event records a timestamp usable with event_elapsed_ms; requires
   * OAR_DEVICE_FEATURE_TIMING_EVENTS. */
  OAR_EVENT_FLAG_TIMING = 1 << 0,
  OAR_EVENT_FLAG_MAX_ENUM = 0x7fffffff
} oar_event_flag_e;

/* Creates an event on |device| with |flags| (oar_event_flag_e bits).
 *
 * Ownership: the caller owns |out_event|; borrows |device|.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_UNIMPLEMENTED if OAR_EVENT_FLAG_TIMING is asked of a device
 * without timing events; OAR_STATUS_INVALID_ARGUMENT for unknown flags. */
typedef oar_status_t (*oar_event_create_fn)(oar_device_t device, uint32_t flags,
                                            oar_event_t* out_event);

/* Destroys |event|; work already waiting on it is unaffected.
 *
 * Ownership: releases |event|.
 * Threading: no other call may use |event| concurrently.
 * Errors: none beyond the global rules. */
typedef oar_status_t (*oar_event_destroy_fn)(oar_event_t event);

/* Records |event| on |stream|: it completes once the work submitted to
 * |stream| so far has completed.
 *
 * Ownership: borrows both.
 * Threading: thread-compatible per stream and per event.
 * Errors: OAR_STATUS_INVALID_ARGUMENT if they belong to different devices. */
typedef oar_status_t (*oar_event_record_fn)(oar_event_t event, oar_stream_t stream);

/* Writes true to |out_done| if the event's work is complete. An event never
 * recorded counts as complete.
 *
 * Ownership: borrows |event|.
 * Threading: thread-safe.
 * Errors: the asynchronous error of its stream's work before the record. */
typedef oar_status_t (*oar_event_query_fn)(oar_event_t event, bool* out_done);

/* Blocks until |event| completes. An event never recorded returns at once.
 *
 * Ownership: borrows |event|.
 * Threading: thread-safe.
 * Errors: the asynchronous error of its stream's work before the record. */
typedef oar_status_t (*oar_event_synchronize_fn)(oar_event_t event);

/* Writes the milliseconds between two completed timing events to |out_ms|.
 *
 * Ownership: borrows both.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_FAILED_PRECONDITION if either is not complete or was not
 * created with OAR_EVENT_FLAG_TIMING or was never recorded. */
typedef oar_status_t (*oar_event_elapsed_ms_fn)(oar_event_t start, oar_event_t end, float* out_ms);

#ifdef __cplusplus
}
#endif

#endif /* OAR_EVENT_H_ */
