/* OAR C ABI: the plugin entry point, the plugin's function table and the host
 * services the core hands to the plugin.
 *
 * A plugin is a shared library that exports exactly one symbol,
 * OAR_PLUGIN_ENTRY_SYMBOL, of type oar_plugin_query_fn. It returns the table
 * below. The core checks struct_size and abi_major before it touches anything
 * else, reads only the fields both sides' struct_size cover, and rejects a
 * table whose required slots are NULL (see docs/abi.md for the list). A NULL
 * optional slot means "unsupported". */
#ifndef OAR_PLUGIN_H_
#define OAR_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>

#include "oar/collective.h"
#include "oar/device.h"
#include "oar/event.h"
#include "oar/handles.h"
#include "oar/kernel.h"
#include "oar/memory.h"
#include "oar/status.h"
#include "oar/stream.h"
#include "oar/trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MAJOR changes break (remove, reorder, retype); MINOR only appends. */
#define OAR_ABI_MAJOR 1
#define OAR_ABI_MINOR 1

#define OAR_PLUGIN_ENTRY_SYMBOL "oar_plugin_query"

typedef enum oar_log_level_e {
  OAR_LOG_LEVEL_DEBUG = 0,
  OAR_LOG_LEVEL_INFO = 1,
  OAR_LOG_LEVEL_WARNING = 2,
  OAR_LOG_LEVEL_ERROR = 3,
  OAR_LOG_LEVEL_MAX_ENUM = 0x7fffffff
} oar_log_level_e;

/* What the core offers the plugin. Valid from initialize until finalize
 * returns. */
typedef struct oar_host_services_t {
  size_t struct_size; /* OAR_HOST_SERVICES_STRUCT_SIZE */
  uint32_t abi_major;
  uint32_t abi_minor;
  void* context; /* pass to every service */
  /* Explains the failure the calling thread is about to return. The host
   * copies |message|; a NULL |message| is allowed.
   * Threading: thread-safe; the message is kept per calling thread. */
  void (*report_error)(void* context, oar_status_t code, const char* message);
  /* Writes a diagnostic line through the host's logger. Thread-safe. */
  void (*log)(void* context, int32_t level, const char* message);
  /* Adds a timed record to the host's trace; a no-op when tracing is off.
   * Thread-safe; the host copies the record and its strings. */
  void (*trace)(void* context, const oar_trace_record_t* record);
} oar_host_services_t;
#define OAR_HOST_SERVICES_STRUCT_SIZE OAR_STRUCT_SIZE(oar_host_services_t, trace)
OAR_CHECK_STRUCT_SIZE(oar_host_services_t, trace, OAR_HOST_SERVICES_STRUCT_SIZE);

/* Prepares the plugin; called once before any other slot.
 *
 * Ownership: borrows |host| until finalize returns.
 * Threading: called once, from one thread.
 * Errors: any code with a message; the core then skips the plugin and never
 * calls finalize. */
typedef oar_status_t (*oar_plugin_initialize_fn)(const oar_host_services_t* host);

/* Releases everything the plugin holds; called once, last, after the core has
 * closed every device. The library is unloaded afterwards.
 *
 * Ownership: none.
 * Threading: called once, from one thread.
 * Errors: reported and logged; unloading goes on. */
typedef oar_status_t (*oar_plugin_finalize_fn)(void);

/* The plugin's table. Append-only: a new slot goes at the end, bumps
 * OAR_ABI_MINOR and moves OAR_PLUGIN_API_STRUCT_SIZE. */
typedef struct oar_plugin_api_t {
  size_t struct_size;  /* OAR_PLUGIN_API_STRUCT_SIZE of the plugin's headers */
  uint32_t abi_major;  /* OAR_ABI_MAJOR of the plugin's headers */
  uint32_t abi_minor;  /* OAR_ABI_MINOR of the plugin's headers */
  const char* name;    /* short, lowercase: "cpu", "opencl" */
  const char* version; /* the plugin's own version, "1.2.0" */
  const char* vendor;

  /* plugin */
  oar_plugin_initialize_fn initialize;
  oar_plugin_finalize_fn finalize;
  oar_register_kernels_fn register_kernels; /* optional */

  /* device */
  oar_device_count_fn device_count;
  oar_device_properties_fn device_properties;
  oar_device_open_fn device_open;
  oar_device_close_fn device_close;
  oar_device_synchronize_fn device_synchronize;
  oar_device_memory_info_fn device_memory_info; /* optional */

  /* stream */
  oar_stream_create_fn stream_create;
  oar_stream_destroy_fn stream_destroy;
  oar_stream_synchronize_fn stream_synchronize;
  oar_stream_query_fn stream_query;
  oar_stream_wait_event_fn stream_wait_event;
  oar_stream_add_host_callback_fn stream_add_host_callback; /* optional */

  /* event */
  oar_event_create_fn event_create;
  oar_event_destroy_fn event_destroy;
  oar_event_record_fn event_record;
  oar_event_query_fn event_query;
  oar_event_synchronize_fn event_synchronize;
  oar_event_elapsed_ms_fn event_elapsed_ms; /* optional */

  /* memory */
  oar_memory_allocate_fn memory_allocate;
  oar_memory_free_fn memory_free;
  oar_memory_host_address_fn memory_host_address; /* required with host-visible kinds */
  oar_memory_copy_h2d_fn memory_copy_h2d;
  oar_memory_copy_d2h_fn memory_copy_d2h;
  oar_memory_copy_d2d_fn memory_copy_d2d;
  oar_memory_copy_peer_fn memory_copy_peer; /* optional */
  oar_memory_fill_fn memory_fill;

  /* collective: all optional */
  oar_comm_unique_id_size_fn comm_unique_id_size;
  oar_comm_get_unique_id_fn comm_get_unique_id;
  oar_comm_create_fn comm_create;
  oar_comm_destroy_fn comm_destroy;
  oar_comm_abort_fn comm_abort;
  oar_comm_all_reduce_fn comm_all_reduce;
  oar_comm_broadcast_fn comm_broadcast;
  oar_comm_reduce_fn comm_reduce;
  oar_comm_all_gather_fn comm_all_gather;
  oar_comm_reduce_scatter_fn comm_reduce_scatter;
  oar_comm_all_to_all_fn comm_all_to_all;
  oar_comm_send_fn comm_send;
  oar_comm_recv_fn comm_recv;
  oar_comm_group_begin_fn comm_group_begin;
  oar_comm_group_end_fn comm_group_end;
} oar_plugin_api_t;
#define OAR_PLUGIN_API_STRUCT_SIZE OAR_STRUCT_SIZE(oar_plugin_api_t, comm_group_end)
OAR_CHECK_STRUCT_SIZE(oar_plugin_api_t, comm_group_end, OAR_PLUGIN_API_STRUCT_SIZE);

/* The size of the table's fixed header (struct_size .. abi_minor): the part
 * the core reads before it trusts anything else. */
#define OAR_PLUGIN_API_HEADER_SIZE OAR_STRUCT_SIZE(oar_plugin_api_t, abi_minor)

/* The plugin's one exported symbol. Returns the plugin's table, or NULL if the
 * plugin cannot serve a host of ABI |host_abi_major|.|host_abi_minor|.
 *
 * Ownership: the table is the plugin's, static, valid until unload.
 * Threading: thread-safe; may be called more than once.
 * Errors: none; it must not fail other than by returning NULL. */
typedef const oar_plugin_api_t* (*oar_plugin_query_fn)(uint32_t host_abi_major,
                                                       uint32_t host_abi_minor);

#ifdef __cplusplus
}
#endif

#endif /* OAR_PLUGIN_H_ */
