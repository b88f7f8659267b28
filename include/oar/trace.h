/* OAR C ABI: tracing. A plugin reports timed records of its own work through
 * the host's trace service; the core merges them with its own records and
 * writes Chrome-trace JSON when OAR_TRACE names a file. */
#ifndef OAR_TRACE_H_
#define OAR_TRACE_H_

#include <stddef.h>
#include <stdint.h>

#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct oar_trace_record_t {
  size_t struct_size;   /* OAR_TRACE_RECORD_STRUCT_SIZE */
  const char* name;     /* copied by the host */
  const char* category; /* "kernel", "copy", "sync", ...; copied by the host */
  oar_device_t device;
  oar_stream_t stream; /* may be NULL */
  uint64_t start_ns;   /* CLOCK_MONOTONIC nanoseconds */
  uint64_t end_ns;
} oar_trace_record_t;
#define OAR_TRACE_RECORD_STRUCT_SIZE OAR_STRUCT_SIZE(oar_trace_record_t, end_ns)
OAR_CHECK_STRUCT_SIZE(oar_trace_record_t, end_ns, OAR_TRACE_RECORD_STRUCT_SIZE);

#ifdef __cplusplus
}
#endif

#endif /* OAR_TRACE_H_ */
