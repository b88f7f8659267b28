/* The defects tests/loader/test_plugin.c can be built with, shared by the
 * plugin and the tests that expect its diagnostics. CMake selects one with
 * OAR_TEST_DEFECT=<one of these names>. */
#ifndef OAR_TESTS_LOADER_TEST_PLUGIN_H_
#define OAR_TESTS_LOADER_TEST_PLUGIN_H_

#define OAR_TEST_DEFECT_NONE 0
/* The library exports oar_plugin_qurey instead of oar_plugin_query. */
#define OAR_TEST_DEFECT_NO_ENTRY 1
/* initialize calls a function that no library defines. */
#define OAR_TEST_DEFECT_UNDEFINED_SYMBOL 2
/* The table says abi_major 99. */
#define OAR_TEST_DEFECT_ABI_MAJOR 3
/* struct_size covers the header and 8 bytes more: less than ABI 1.0's table. */
#define OAR_TEST_DEFECT_SHORT_TABLE 4
/* struct_size 4: less than the header itself. */
#define OAR_TEST_DEFECT_TINY_TABLE 5
/* The required stream_create slot is NULL. */
#define OAR_TEST_DEFECT_MISSING_SLOT 6
/* initialize reports an error through the host and fails. */
#define OAR_TEST_DEFECT_INIT_FAILS 7
/* oar_plugin_query returns NULL. */
#define OAR_TEST_DEFECT_QUERY_NULL 8

/* initialize writes to an unmapped address (SIGSEGV). */
#define OAR_TEST_DEFECT_SEGV_IN_INIT 9
/* initialize calls raise(SIGSEGV): a signal handler that returns (LLVM's,
 * once PoCL or Mesa loaded it) lets it carry on. */
#define OAR_TEST_DEFECT_RAISE_IN_INIT 10
/* initialize calls abort(). */
#define OAR_TEST_DEFECT_ABORT_IN_INIT 11
/* initialize calls exit(3). */
#define OAR_TEST_DEFECT_EXIT_IN_INIT 12
/* initialize never returns. */
#define OAR_TEST_DEFECT_HANG_IN_INIT 13
/* device_count writes to an unmapped address. */
#define OAR_TEST_DEFECT_SEGV_IN_DEVICE_COUNT 14
/* The table's version and vendor strings are 1 MiB long. */
#define OAR_TEST_DEFECT_HUGE_STRINGS 15

/* The exit status of the EXIT_IN_INIT build. */
#define OAR_TEST_EXIT_STATUS 3

/* What the initialize of the INIT_FAILS build reports; the test looks for it in the reason. */
#define OAR_TEST_INIT_MESSAGE "the test driver refuses to start (OAR_TEST_DEFECT_INIT_FAILS)"

/* With OAR_TEST_LOG_AT_INIT set in the environment, initialize logs this
 * warning (as a plugin without its hardware does). */
#define OAR_TEST_INIT_WARNING "the test driver found no hardware (OAR_TEST_LOG_AT_INIT)"

#endif /* OAR_TESTS_LOADER_TEST_PLUGIN_H_ */
