/* OAR C ABI: devices and their capabilities. */
#ifndef OAR_DEVICE_H_
#define OAR_DEVICE_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum oar_device_kind_e {
  OAR_DEVICE_KIND_CPU = 0,
  OAR_DEVICE_KIND_GPU = 1,
  OAR_DEVICE_KIND_NPU = 2,
  OAR_DEVICE_KIND_ACCELERATOR = 3,
  OAR_DEVICE_KIND_OTHER = 4,
  OAR_DEVICE_KIND_MAX_ENUM = 0x7fffffff
} oar_device_kind_e;

/* Kinds of memory a device can allocate, as a bit set in
 * oar_device_properties_t.memory_kinds. */
typedef enum oar_memory_kind_e {
  /* Device memory the host may not be able to address (an opaque handle). */
  OAR_MEMORY_KIND_DEVICE = 1 << 0,
  /* Page-locked host memory the device can copy from and to quickly; the host
   * addresses it through memory_host_address. */
  OAR_MEMORY_KIND_HOST_PINNED = 1 << 1,
  /* Memory both sides address with the same pointer (managed / USM shared). */
  OAR_MEMORY_KIND_UNIFIED = 1 << 2,
  OAR_MEMORY_KIND_MAX_ENUM = 0x7fffffff
} oar_memory_kind_e;

/* Data types beyond f32/i32/i64/bool (which every device supports), as a bit
 * set in oar_device_properties_t.dtypes (kernels) and .native_dtypes (the
 * hardware's arithmetic). The operator set has no u8 or i8 (docs/ops.md);
 * INT8_DOT announces int8 dot products for a later set. */
typedef enum oar_dtype_support_e {
  OAR_DTYPE_SUPPORT_F16 = 1 << 0,
  OAR_DTYPE_SUPPORT_BF16 = 1 << 1,
  OAR_DTYPE_SUPPORT_F64 = 1 << 2,
  OAR_DTYPE_SUPPORT_INT8_DOT = 1 << 3,
  OAR_DTYPE_SUPPORT_MAX_ENUM = 0x7fffffff
} oar_dtype_support_e;

/* Optional features, as a bit set in oar_device_properties_t.features. */
typedef enum oar_device_feature_e {
  /* Events created with OAR_EVENT_FLAG_TIMING measure elapsed time. */
  OAR_DEVICE_FEATURE_TIMING_EVENTS = 1 << 0,
  /* memory_copy_peer works between this device and others of the plugin. */
  OAR_DEVICE_FEATURE_PEER_ACCESS = 1 << 1,
  /* The collective slots work on this device. */
  OAR_DEVICE_FEATURE_COLLECTIVES = 1 << 2,
  /* Copies return before the data moved (stream ordered, truly async). */
  OAR_DEVICE_FEATURE_ASYNC_COPIES = 1 << 3,
  /* stream_add_host_callback is supported. */
  OAR_DEVICE_FEATURE_HOST_CALLBACKS = 1 << 4,
  OAR_DEVICE_FEATURE_MAX_ENUM = 0x7fffffff
} oar_device_feature_e;

#define OAR_DEVICE_NAME_SIZE 256
#define OAR_DEVICE_TEXT_SIZE 128

/* What a device is and can do. The core and the conformance suite branch on
 * these fields, never on the plugin's name. Strings are NUL-terminated. */
typedef struct oar_device_properties_t {
  size_t struct_size; /* set by the caller to OAR_DEVICE_PROPERTIES_STRUCT_SIZE */
  char name[OAR_DEVICE_NAME_SIZE];
  char vendor[OAR_DEVICE_TEXT_SIZE];
  char driver_version[OAR_DEVICE_TEXT_SIZE];
  int32_t kind;                 /* oar_device_kind_e */
  int32_t dlpack_device_type;   /* DLDeviceType tensors on this device carry:
                                   kDLExtDev for a chip no DLPack consumer
                                   can address (docs/abi.md, section 5) */
  uint64_t total_memory;        /* bytes of OAR_MEMORY_KIND_DEVICE memory */
  uint64_t max_allocation_size; /* largest single allocation, bytes */
  uint64_t min_alignment;       /* every allocation is aligned to this, bytes */
  uint32_t memory_kinds;        /* oar_memory_kind_e bits */
  uint32_t dtypes;              /* oar_dtype_support_e bits */
  uint32_t features;            /* oar_device_feature_e bits */
  uint32_t compute_units;
  /* ABI 1.1. The oar_dtype_support_e bits whose arithmetic the hardware
   * executes itself: instructions that compute on operands of that type
   * (add, multiply, fma, or dot products accumulating wider), not only
   * conversions to and from f32 (x86's f16c, every aarch64's fcvt). E.g. f16
   * for Arm's fphp + asimdhp or x86's avx512_fp16, bf16 for Arm's bf16 or
   * x86's avx512_bf16 / amx_bf16, f64 on every x86-64 and aarch64 core,
   * int8_dot for Arm's asimddp or x86's VNNI. A fact about the hardware,
   * independent of |dtypes|, which promises kernels: a claimed dtype that is
   * not native is computed in a wider type (correct, no faster than f32).
   * A plugin of ABI 1.0 does not write it: read it only when the plugin
   * table's abi_minor is 1 or more (0 then means nothing beyond f32/i32/i64
   * is native). docs/abi.md, "Native arithmetic". */
  uint32_t native_dtypes;
} oar_device_properties_t;
#define OAR_DEVICE_PROPERTIES_STRUCT_SIZE OAR_STRUCT_SIZE(oar_device_properties_t, native_dtypes)
OAR_CHECK_STRUCT_SIZE(oar_device_properties_t, native_dtypes, OAR_DEVICE_PROPERTIES_STRUCT_SIZE);

/* Writes the number of devices the plugin serves to |out_count|; 0 when the
 * runtime or hardware is absent (that is not an error).
 *
 * Ownership: none.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_INTERNAL if the vendor runtime fails unexpectedly. */
typedef oar_status_t (*oar_device_count_fn)(int32_t* out_count);

/* Fills |out_properties| for device |index| (0..count-1). The plugin writes
 * only the first min(out_properties->struct_size, its own size) bytes.
 *
 * Ownership: borrows |out_properties|.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_OUT_OF_RANGE for a bad |index|; OAR_STATUS_INVALID_ARGUMENT
 * if struct_size is smaller than the ABI 1.0 size. */
typedef oar_status_t (*oar_device_properties_fn)(int32_t index,
                                                 oar_device_properties_t* out_properties);

/* Opens device |index| and returns a handle to it in |out_device|.
 *
 * Ownership: the caller owns |out_device| and closes it with device_close.
 * Threading: thread-safe; opening an index twice returns two handles.
 * Errors: OAR_STATUS_OUT_OF_RANGE for a bad |index|; OAR_STATUS_UNAVAILABLE if
 * the device cannot be opened now. */
typedef oar_status_t (*oar_device_open_fn)(int32_t index, oar_device_t* out_device);

/* Closes |device|. The core destroys every stream, event and allocation of the
 * device before, so a plugin may treat leftovers as a caller bug.
 *
 * Ownership: releases |device|.
 * Threading: no other call may use |device| concurrently.
 * Errors: none beyond the global rules. */
typedef oar_status_t (*oar_device_close_fn)(oar_device_t device);

/* Blocks until all work on all streams of |device| is complete.
 *
 * Ownership: borrows |device|.
 * Threading: thread-safe.
 * Errors: the first error of failed asynchronous work on any stream. */
typedef oar_status_t (*oar_device_synchronize_fn)(oar_device_t device);

/* Writes the free and total bytes of device memory.
 *
 * Ownership: borrows |device|.
 * Threading: thread-safe.
 * Errors: OAR_STATUS_INTERNAL if the runtime cannot tell. */
typedef oar_status_t (*oar_device_memory_info_fn)(oar_device_t device, uint64_t* out_free,
                                                  uint64_t* out_total);

#ifdef __cplusplus
}
#endif

#endif /* OAR_DEVICE_H_ */
