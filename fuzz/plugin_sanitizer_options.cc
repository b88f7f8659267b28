// Sanitizer settings of the fuzzers that load plugins (dlpack, ops).
//
// The plugins are dlopen'ed modules whose worker threads use dynamic TLS,
// which LeakSanitizer's DTLS tracking misreads with this glibc (its tracer
// dies scanning a bogus range); the leak check itself stays on.
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0"; }
// LLVM's OpenMP runtime (the cpu kernels' threads) leaves its thread-team
// structures allocated at exit; they are its own, not OAR's.
extern "C" const char* __lsan_default_suppressions() { return "leak:libomp.so\n"; }
