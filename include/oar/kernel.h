/* OAR C ABI: kernels. A plugin registers one function per (operator, dtype
 * signature) through the registrar the core hands to register_kernels; the
 * core's dispatcher looks kernels up and calls them with a call record.
 *
 * Tensors in a call record are DLTensors whose |data| is the oar_memory_t of
 * their allocation and whose |byte_offset| is the offset inside it. Shapes and
 * strides are in elements; strides are never NULL. A kernel submits its work to
 * call->stream and may return before the work is done; the call record and
 * everything it points to are valid only during the call, so a plugin copies
 * what its asynchronous work needs. */
#ifndef OAR_KERNEL_H_
#define OAR_KERNEL_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dlpack/dlpack.h"
#include "oar/handles.h"
#include "oar/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The DLDataType code of OAR's bool element type: {OAR_DTYPE_CODE_BOOL, 8, 1},
 * one byte per element holding 0 (false) or 1 (true). DLPack 0.8 names this
 * code kDLBool; dlpack.h 0.6 (Debian 12's) has no constant for it, so OAR
 * defines one that means the same with either. Comparisons output bool; where
 * takes a bool condition. */
#define OAR_DTYPE_CODE_BOOL 6

typedef enum oar_attr_type_e {
  OAR_ATTR_TYPE_INT = 0,
  OAR_ATTR_TYPE_FLOAT = 1,
  OAR_ATTR_TYPE_BOOL = 2,
  OAR_ATTR_TYPE_STRING = 3,
  OAR_ATTR_TYPE_INT_ARRAY = 4,
  OAR_ATTR_TYPE_FLOAT_ARRAY = 5,
  OAR_ATTR_TYPE_MAX_ENUM = 0x7fffffff
} oar_attr_type_e;

/* One typed operator attribute (axis, epsilon, transpose flags, ...). */
typedef struct oar_attr_t {
  const char* name;
  int32_t type; /* oar_attr_type_e */
  union {
    int64_t i;
    double f;
    bool b;
    const char* s;
    struct {
      const int64_t* data;
      size_t count;
    } ints;
    struct {
      const double* data;
      size_t count;
    } floats;
  } value;
} oar_attr_t;

/* Scratch memory for a kernel, stream ordered on the call's stream: it may be
 * used by work the kernel submits and is reused only after that work is done.
 * Writes an allocation and the offset inside it. */
typedef oar_status_t (*oar_scratch_allocate_fn)(void* context, uint64_t size,
                                                oar_memory_t* out_memory, uint64_t* out_offset);

/* Everything a kernel receives. */
typedef struct oar_kernel_call_t {
  size_t struct_size; /* OAR_KERNEL_CALL_STRUCT_SIZE */
  oar_device_t device;
  oar_stream_t stream;
  const DLTensor* inputs;
  size_t num_inputs;
  DLTensor* outputs;
  size_t num_outputs;
  const oar_attr_t* attrs;
  size_t num_attrs;
  oar_scratch_allocate_fn scratch_allocate;
  void* scratch_context;
  /* What the kernel registered as |user_data|. */
  void* user_data;
} oar_kernel_call_t;
#define OAR_KERNEL_CALL_STRUCT_SIZE OAR_STRUCT_SIZE(oar_kernel_call_t, user_data)
OAR_CHECK_STRUCT_SIZE(oar_kernel_call_t, user_data, OAR_KERNEL_CALL_STRUCT_SIZE);

/* Runs one operator on call->stream.
 *
 * Ownership: borrows |call| and everything it points to, for the call only.
 * Threading: thread-compatible per stream.
 * Errors: OAR_STATUS_INVALID_ARGUMENT for inputs the kernel cannot take; an
 * error of the asynchronous work surfaces on the stream instead. The core
 * matched the registered dtypes and arity; for an operator of the set it also
 * checked the call against the schema (dtype rule, attribute names and types,
 * output shapes equal to the inferred ones: docs/abi.md, section 5), so a
 * kernel checks only what its own implementation cannot take. */
typedef oar_status_t (*oar_kernel_fn)(const oar_kernel_call_t* call);

typedef enum oar_kernel_flag_e {
  /* The kernel handles arbitrary strides; without it the core passes only
   * contiguous (row-major) tensors. */
  OAR_KERNEL_FLAG_STRIDED_INPUTS = 1 << 0,
  /* The kernel may run with an output aliasing an input (in place). */
  OAR_KERNEL_FLAG_INPLACE_OK = 1 << 1,
  OAR_KERNEL_FLAG_MAX_ENUM = 0x7fffffff
} oar_kernel_flag_e;

/* One kernel as the plugin registers it. */
typedef struct oar_kernel_def_t {
  size_t struct_size;  /* OAR_KERNEL_DEF_STRUCT_SIZE */
  const char* op_name; /* the operator, as the core's schema names it */
  /* dtypes of the inputs, then of the outputs; lanes are 1. */
  const DLDataType* dtypes;
  size_t num_inputs;
  size_t num_outputs;
  uint32_t flags; /* oar_kernel_flag_e bits */
  oar_kernel_fn fn;
  void* user_data;
} oar_kernel_def_t;
#define OAR_KERNEL_DEF_STRUCT_SIZE OAR_STRUCT_SIZE(oar_kernel_def_t, user_data)
OAR_CHECK_STRUCT_SIZE(oar_kernel_def_t, user_data, OAR_KERNEL_DEF_STRUCT_SIZE);

/* The registrar the core passes to register_kernels. */
typedef struct oar_kernel_registrar_t {
  size_t struct_size; /* OAR_KERNEL_REGISTRAR_STRUCT_SIZE */
  void* context;
  /* Adds |def|; the core copies it and the strings and arrays it points to.
   *
   * Ownership: borrows |def|.
   * Threading: called only from within register_kernels.
   * Errors: OAR_STATUS_ALREADY_EXISTS for a second kernel with the same op and
   * dtypes; OAR_STATUS_INVALID_ARGUMENT for a NULL fn or op_name. */
  oar_status_t (*register_kernel)(void* context, const oar_kernel_def_t* def);
} oar_kernel_registrar_t;
#define OAR_KERNEL_REGISTRAR_STRUCT_SIZE OAR_STRUCT_SIZE(oar_kernel_registrar_t, register_kernel)
OAR_CHECK_STRUCT_SIZE(oar_kernel_registrar_t, register_kernel, OAR_KERNEL_REGISTRAR_STRUCT_SIZE);

/* Registers every kernel of the plugin. Called once after initialize.
 *
 * Ownership: borrows |registrar| for the call.
 * Threading: called once, from one thread.
 * Errors: a failure is reported; kernels registered before it stay usable. */
typedef oar_status_t (*oar_register_kernels_fn)(const oar_kernel_registrar_t* registrar);

#ifdef __cplusplus
}
#endif

#endif /* OAR_KERNEL_H_ */
