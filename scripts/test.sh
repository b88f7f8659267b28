#!/usr/bin/env bash
# Builds OAR and runs every test: the full suite in build/, then the runtime,
# allocator, work-queue and loader tests again under AddressSanitizer and
# UndefinedBehaviorSanitizer in build-asan/ (leaks at shutdown included). The
# opencl and vulkan plugins are left out of the sanitized build: their drivers
# here (PoCL, lavapipe) are uninstrumented LLVM JITs whose own allocations the
# leak checker would report.
# Usage: scripts/test.sh [--no-asan]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs" --timeout 300

if [ "${1:-}" != "--no-asan" ]; then
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DOAR_SANITIZE=address,undefined \
    -DOAR_BUILD_BENCHMARKS=OFF -DOAR_PLUGIN_OPENCL=OFF -DOAR_PLUGIN_VULKAN=OFF
  cmake --build build-asan -j "$jobs"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure -j "$jobs" --timeout 600 \
    -R 'AllocatorTest|CachingAllocator|AllocatorConfig|CopyTest|StreamEventTest|DispatchTest|OpsTest|DlpackTest|ShutdownTest|TraceTest|WorkQueue|Sdk|Loader|Validat|SimTest'
fi

# libFuzzer over every parser of outside input (manifests, environment, ELF
# headers, ...), 20 s per fuzzer, built with clang in build-fuzz/; a crash fails.
[ "${1:-}" = "--no-asan" ] || scripts/fuzz.sh 20
