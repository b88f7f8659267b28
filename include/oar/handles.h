/* OAR C ABI: the opaque handles that cross the ABI. A plugin defines the
 * structs behind them (for example `struct oar_stream_s { ... };`); the core
 * never looks inside. */
#ifndef OAR_HANDLES_H_
#define OAR_HANDLES_H_

#ifdef __cplusplus
extern "C" {
#endif

/* An opened device. */
typedef struct oar_device_s* oar_device_t;
/* An ordered queue of work on one device. */
typedef struct oar_stream_s* oar_stream_t;
/* A marker recorded on a stream; completes when the work before it does. */
typedef struct oar_event_s* oar_event_t;
/* One allocation of memory. It may be a real pointer (cpu, CUDA, Level Zero
 * USM) or an opaque object (an OpenCL cl_mem, a Vulkan buffer): the core never
 * does arithmetic on it and addresses bytes inside it as (memory, offset). It is
 * what DLTensor.data holds for tensors on the device. */
typedef struct oar_memory_s* oar_memory_t;
/* A communicator of a collective group. */
typedef struct oar_comm_s* oar_comm_t;

#ifdef __cplusplus
}
#endif

#endif /* OAR_HANDLES_H_ */
