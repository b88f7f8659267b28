/* A plugin written in plain C99 against oar/plugin.h, built once as a good
 * plugin and once per defect the loader must diagnose. Each build defines
 * OAR_TEST_PLUGIN_NAME (the name in the table) and OAR_TEST_DEFECT (one of the
 * names in test_plugin.h); everything but the defect is a valid, minimal table, so the
 * loader reaches the check under test and no other.
 *
 * The good build proves the ABI is usable from C: every required slot is
 * present, initialize and finalize succeed, device_count reports 0, and every
 * other slot fails with UNIMPLEMENTED. */
#include "test_plugin.h"

#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "oar/plugin.h"

#ifndef OAR_TEST_DEFECT
#error "define OAR_TEST_DEFECT"
#endif
#ifndef OAR_TEST_PLUGIN_NAME
#error "define OAR_TEST_PLUGIN_NAME"
#endif

static const oar_host_services_t* g_host = NULL;

static oar_status_t fail(oar_status_t code, const char* message) {
  if (g_host != NULL) g_host->report_error(g_host->context, code, message);
  return code;
}

#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_UNDEFINED_SYMBOL
/* Declared here, defined nowhere: dlopen with RTLD_NOW must refuse the library. */
extern oar_status_t oar_test_symbol_that_nobody_defines(void);
#endif

/* Volatile, so that the compiler keeps the crash and the endless loop. */
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_SEGV_IN_INIT || \
    OAR_TEST_DEFECT == OAR_TEST_DEFECT_SEGV_IN_DEVICE_COUNT
/* Not NULL, so that UndefinedBehaviorSanitizer does not step in first: an
 * address in the first page, never mapped. */
static int* volatile g_nowhere = (int*)16;
#endif
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_HANG_IN_INIT
static volatile int g_forever = 1;
#endif

static oar_status_t initialize(const oar_host_services_t* host) {
  g_host = host;
  if (getenv("OAR_TEST_LOG_AT_INIT") != NULL) {
    host->log(host->context, OAR_LOG_LEVEL_WARNING, OAR_TEST_INIT_WARNING);
  }
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_SEGV_IN_INIT
  *g_nowhere = 1;
#elif OAR_TEST_DEFECT == OAR_TEST_DEFECT_RAISE_IN_INIT
  raise(SIGSEGV);
#elif OAR_TEST_DEFECT == OAR_TEST_DEFECT_ABORT_IN_INIT
  abort();
#elif OAR_TEST_DEFECT == OAR_TEST_DEFECT_EXIT_IN_INIT
  exit(OAR_TEST_EXIT_STATUS);
#elif OAR_TEST_DEFECT == OAR_TEST_DEFECT_HANG_IN_INIT
  while (g_forever) {
  }
#endif
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_UNDEFINED_SYMBOL
  return oar_test_symbol_that_nobody_defines();
#elif OAR_TEST_DEFECT == OAR_TEST_DEFECT_INIT_FAILS
  return fail(OAR_STATUS_UNAVAILABLE, OAR_TEST_INIT_MESSAGE);
#else
  return OAR_STATUS_OK;
#endif
}

static oar_status_t finalize(void) {
  g_host = NULL;
  return OAR_STATUS_OK;
}

static oar_status_t device_count(int32_t* out_count) {
  if (out_count == NULL) return fail(OAR_STATUS_INVALID_ARGUMENT, "out_count is NULL");
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_SEGV_IN_DEVICE_COUNT
  *g_nowhere = 2;
#endif
  *out_count = 0;
  return OAR_STATUS_OK;
}

/* The remaining required slots: this plugin has no device to serve them, so
 * each one is a stub that ignores its parameters and fails with UNIMPLEMENTED. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define STUB(slot, ...)                                                                   \
  static oar_status_t slot(__VA_ARGS__) {                                                 \
    return fail(OAR_STATUS_UNIMPLEMENTED, "the C test plugin does not implement " #slot); \
  }

STUB(device_properties, int32_t index, oar_device_properties_t* out_properties)
STUB(device_open, int32_t index, oar_device_t* out_device)
STUB(device_close, oar_device_t device)
STUB(device_synchronize, oar_device_t device)
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_MISSING_SLOT
#define TABLE_STREAM_CREATE NULL
#else
STUB(stream_create, oar_device_t device, const oar_stream_desc_t* desc, oar_stream_t* out_stream)
#define TABLE_STREAM_CREATE stream_create
#endif
STUB(stream_destroy, oar_stream_t stream)
STUB(stream_synchronize, oar_stream_t stream)
STUB(stream_query, oar_stream_t stream, bool* out_idle)
STUB(stream_wait_event, oar_stream_t stream, oar_event_t event)
STUB(event_create, oar_device_t device, uint32_t flags, oar_event_t* out_event)
STUB(event_destroy, oar_event_t event)
STUB(event_record, oar_event_t event, oar_stream_t stream)
STUB(event_query, oar_event_t event, bool* out_done)
STUB(event_synchronize, oar_event_t event)
STUB(memory_allocate, oar_device_t device, uint64_t size, uint32_t kind, oar_memory_t* out_memory)
STUB(memory_free, oar_device_t device, oar_memory_t memory)
STUB(memory_copy_h2d, oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, const void* src,
     uint64_t size)
STUB(memory_copy_d2h, oar_stream_t stream, void* dst, oar_memory_t src, uint64_t src_offset,
     uint64_t size)
STUB(memory_copy_d2d, oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, oar_memory_t src,
     uint64_t src_offset, uint64_t size)
STUB(memory_fill, oar_stream_t stream, oar_memory_t dst, uint64_t dst_offset, uint8_t value,
     uint64_t size)

#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_SHORT_TABLE
#define TABLE_SIZE (OAR_PLUGIN_API_HEADER_SIZE + 8)
#elif OAR_TEST_DEFECT == OAR_TEST_DEFECT_TINY_TABLE
#define TABLE_SIZE 4
#else
#define TABLE_SIZE OAR_PLUGIN_API_STRUCT_SIZE
#endif

#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_ABI_MAJOR
#define TABLE_ABI_MAJOR 99
#else
#define TABLE_ABI_MAJOR OAR_ABI_MAJOR
#endif

#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_HUGE_STRINGS
/* Filled by oar_plugin_query: 1 MiB of 'v' and of 'w', each ending in a NUL. */
static char g_huge_version[1 << 20];
static char g_huge_vendor[1 << 20];
#define TABLE_VERSION g_huge_version
#define TABLE_VENDOR g_huge_vendor
#else
#define TABLE_VERSION "0.0.1"
#define TABLE_VENDOR "OAR loader tests"
#endif

static const oar_plugin_api_t kTable = {
    .struct_size = TABLE_SIZE,
    .abi_major = TABLE_ABI_MAJOR,
    .abi_minor = OAR_ABI_MINOR,
    .name = OAR_TEST_PLUGIN_NAME,
    .version = TABLE_VERSION,
    .vendor = TABLE_VENDOR,
    .initialize = initialize,
    .finalize = finalize,
    .device_count = device_count,
    .device_properties = device_properties,
    .device_open = device_open,
    .device_close = device_close,
    .device_synchronize = device_synchronize,
    .stream_create = TABLE_STREAM_CREATE,
    .stream_destroy = stream_destroy,
    .stream_synchronize = stream_synchronize,
    .stream_query = stream_query,
    .stream_wait_event = stream_wait_event,
    .event_create = event_create,
    .event_destroy = event_destroy,
    .event_record = event_record,
    .event_query = event_query,
    .event_synchronize = event_synchronize,
    .memory_allocate = memory_allocate,
    .memory_free = memory_free,
    .memory_copy_h2d = memory_copy_h2d,
    .memory_copy_d2h = memory_copy_d2h,
    .memory_copy_d2d = memory_copy_d2d,
    .memory_fill = memory_fill,
};

#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_NO_ENTRY
#define ENTRY_POINT oar_plugin_qurey
#else
#define ENTRY_POINT oar_plugin_query
#endif

__attribute__((visibility("default"))) const oar_plugin_api_t* ENTRY_POINT(
    uint32_t host_abi_major, uint32_t host_abi_minor) {
  (void)host_abi_minor;
  if (OAR_TEST_DEFECT == OAR_TEST_DEFECT_QUERY_NULL) return NULL;
#if OAR_TEST_DEFECT == OAR_TEST_DEFECT_HUGE_STRINGS
  memset(g_huge_version, 'v', sizeof(g_huge_version) - 1);
  memset(g_huge_vendor, 'w', sizeof(g_huge_vendor) - 1);
#endif
  return host_abi_major == OAR_ABI_MAJOR ? &kTable : NULL;
}
