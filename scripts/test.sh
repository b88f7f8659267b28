#!/usr/bin/env bash
# Builds OAR and runs every test: the full suite in build/, then the runtime,
# allocator, work-queue and loader tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ (leaks at shutdown included). The
# opencl and vulkan plugins are left out of the sanitized build: their drivers
# here (PoCL, lavapipe) are uninstrumented LLVM JITs whose own allocations the
# leak checker would report; so is cuda (no GPU here: its fake-driver tests run
# in the main suite, and nvcc would only cost time). Then the multi-threaded tests and the stress test
# under ThreadSanitizer in build-tsan/ (core, cpu and sim plugins only).
# Between the suite and the sanitizers, scripts/test-arm.sh: OAR for aarch64,
# tested and certified under qemu-aarch64 in build-arm/.
# Usage: scripts/test.sh [--no-asan]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
# Each stage's start, printed again at exit (a log's tail shows them all), so
# that CI's log shows where its 45 minutes go.
stages=""
stage() {
  stages+="  ${SECONDS}s: $*"$'\n'
  echo "== test.sh at ${SECONDS}s: $*"
}
trap 'printf "== test.sh stages (start times):\n%s  ${SECONDS}s: exit\n" "$stages"' EXIT

stage "build and test in build/"

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"
stage "ctest in build/"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300

# aarch64: cross-built in build-arm/, its unit tests and oar-conform (core
# profile) on the cpu plugin under qemu-aarch64.
stage "aarch64 under qemu (scripts/test-arm.sh)"
scripts/test-arm.sh

if [ "${1:-}" != "--no-asan" ]; then
  stage "AddressSanitizer and UBSan in build-asan/"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOAR_SANITIZE=address,undefined \
    -DOAR_BUILD_BENCHMARKS=OFF -DOAR_PLUGIN_OPENCL=OFF -DOAR_PLUGIN_VULKAN=OFF -DOAR_PLUGIN_CUDA=OFF
  # Only what the sanitized tests run (a third of the full build's objects).
  cmake --build build-asan -j "$jobs" --target oar_runtime_test oar_loader_test \
    oar_plugin_sdk_test oar_caching_allocator_test oar_sim_test oar_validate_test oar_stress_test \
    oar_cpu_vmath_test oar_loader_alloc_failure_test oar_misbehaving_plugin_test oar_collective_test \
    oar_plugin_cpu oar_plugin_sim oar_plugin_null
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 600 \
    -R 'AllocatorTest|CachingAllocator|AllocatorConfig|CopyTest|StreamEventTest|DispatchTest|OpsTest|DlpackTest|ShutdownTest|TraceTest|WorkQueue|Sdk|Loader|Validat|SimTest|OverflowTest|LifetimeTest|TwoRuntimesTest|FailedStreamTest|StressTest|MisbehavingPluginTest|VmathTest|^collective_(sim_native_2_devices_all|sim_native_2_devices_abort|staged_cpu_sim_2_devices_1_process|staged_cpu_sim_2_devices_abort|cpu_ring_3_ranks|abort_ends_pending_ring)$'
fi

# ThreadSanitizer: only what the threaded tests need is built. OpenMP, whose
# runtime TSan cannot see into, runs one thread. The collectives' abort tests
# (ranks abandoning a collective under way, in one process) are here; their
# full matrices take about 50 s each under TSan and pass (run by hand).
if [ "${1:-}" != "--no-asan" ]; then
  stage "ThreadSanitizer in build-tsan/"
  cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOAR_SANITIZE=thread \
    -DOAR_BUILD_BENCHMARKS=OFF -DOAR_PLUGIN_OPENCL=OFF -DOAR_PLUGIN_VULKAN=OFF -DOAR_PLUGIN_CUDA=OFF
  cmake --build build-tsan -j "$jobs" --target oar_runtime_test oar_stress_test \
    oar_caching_allocator_test oar_plugin_sdk_test oar_collective_test oar_plugin_cpu oar_plugin_sim
  OMP_NUM_THREADS=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
    ctest --test-dir build-tsan --output-on-failure -j "$jobs" --timeout 600 \
    -R 'StreamEventTest|AllocatorTest|WorkQueue|TwoRuntimesTest|TraceTest|FailedStreamTest|StressTest|LifetimeTest|^collective_(sim_native_2_devices|staged_cpu_sim_2_devices)_abort$'
fi

# libFuzzer over every parser of outside input (manifests, environment, ELF
# headers, ...), 20 s per fuzzer, built with clang in build-fuzz/; a crash fails.
[ "${1:-}" = "--no-asan" ] || { stage "libFuzzer (scripts/fuzz.sh 20)" && scripts/fuzz.sh 20; }
