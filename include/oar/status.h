/* OAR C ABI: status codes and the rules every entry point follows.
 *
 * Global rules (stated once, they hold for every header of the ABI):
 *  - Ownership: an object returned through an |out_...| parameter of a
 *    *_create / *_open / *_allocate call is owned by the caller, who releases it
 *    with the matching *_destroy / *_close / *_free call. Releasing NULL is a
 *    no-op that returns OAR_STATUS_OK. Pointers passed in are borrowed for the
 *    duration of the call only, unless a contract says otherwise.
 *  - Errors: every fallible call returns oar_status_t. On failure a plugin
 *    explains why by calling the host's report_error service (see plugin.h) on
 *    the thread that returns the status, just before returning. No memory ever
 *    crosses the boundary to be freed by the other side. |out_...| parameters
 *    are left unchanged on failure.
 *  - Threading: unless a contract says otherwise, calls on different objects
 *    may run concurrently from different threads; calls on one object are
 *    thread-compatible (the caller serialises them).
 */
#ifndef OAR_STATUS_H_
#define OAR_STATUS_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The canonical status codes (the same set as gRPC, Abseil and PJRT use). */
typedef enum oar_status_e {
  OAR_STATUS_OK = 0,
  OAR_STATUS_CANCELLED = 1,
  OAR_STATUS_UNKNOWN = 2,
  OAR_STATUS_INVALID_ARGUMENT = 3,
  OAR_STATUS_DEADLINE_EXCEEDED = 4,
  OAR_STATUS_NOT_FOUND = 5,
  OAR_STATUS_ALREADY_EXISTS = 6,
  OAR_STATUS_PERMISSION_DENIED = 7,
  OAR_STATUS_RESOURCE_EXHAUSTED = 8,
  OAR_STATUS_FAILED_PRECONDITION = 9,
  OAR_STATUS_ABORTED = 10,
  OAR_STATUS_OUT_OF_RANGE = 11,
  OAR_STATUS_UNIMPLEMENTED = 12,
  OAR_STATUS_INTERNAL = 13,
  OAR_STATUS_UNAVAILABLE = 14,
  OAR_STATUS_DATA_LOSS = 15,
  OAR_STATUS_MAX_ENUM = 0x7fffffff
} oar_status_e;

/* Status codes travel as a fixed-width integer so that the enum's width never
 * depends on a compiler. */
typedef int32_t oar_status_t;

/* Sizes of ABI structs are compared field by field: a struct's size constant is
 * the offset of the end of its last field, so that tail padding never changes
 * what a newer or older peer reads. */
#define OAR_STRUCT_SIZE(type, last_field) \
  (offsetof(type, last_field) + sizeof(((type*)0)->last_field))

/* Ties a struct's size constant to its last field at compile time: appending a
 * field without moving the constant fails to compile. */
#define OAR_CONCAT_INNER_(a, b) a##b
#define OAR_CONCAT_(a, b) OAR_CONCAT_INNER_(a, b)
#if defined(__cplusplus)
#define OAR_CHECK_STRUCT_SIZE(type, last_field, size_constant)        \
  static_assert(OAR_STRUCT_SIZE(type, last_field) == (size_constant), \
                #size_constant " must end at " #type "." #last_field)
#else
/* C99 has no _Static_assert: a negative array size fails the build instead. */
#define OAR_CHECK_STRUCT_SIZE(type, last_field, size_constant) \
  typedef char OAR_CONCAT_(                                    \
      oar_struct_size_check_,                                  \
      __LINE__)[(OAR_STRUCT_SIZE(type, last_field) == (size_constant)) ? 1 : -1]
#endif

#ifdef __cplusplus
}
#endif

#endif /* OAR_STATUS_H_ */
