#!/usr/bin/env bash
# Builds OAR's libFuzzer targets (fuzz/) with clang-15, AddressSanitizer and
# UndefinedBehaviorSanitizer in build-fuzz/ (only what the fuzzers need: no
# opencl, vulkan, tests or benchmarks) and runs each one for a bounded time,
# as many at once as there are cores, over its seed corpus fuzz/corpus/<name>/.
# Any crash, sanitizer report, timeout or out-of-memory fails the run, and the
# input that caused it is written into fuzz/corpus/<name>/ (crash-*, timeout-*,
# oom-*): commit it with the fix, and every later run replays it.
#
# Usage: scripts/fuzz.sh [SECONDS_PER_FUZZER] [NAME...]
#   scripts/fuzz.sh            20 s each (what scripts/test.sh runs)
#   scripts/fuzz.sh 3600       an hour each, for a real search
#   scripts/fuzz.sh 60 manifest
# New inputs that add coverage stay in build-fuzz/fuzz-work/<name>/; copy the
# interesting ones into the seed corpus by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
jobs=$(nproc)
cc=${OAR_FUZZ_CC:-clang-15}
cxx=${OAR_FUZZ_CXX:-clang++-15}

# The sanitizers' shared runtime, so that plugin modules (linked with -z defs)
# resolve their instrumentation against it.
runtime_dir=$(dirname "$("$cc" -print-file-name=libclang_rt.asan-x86_64.so)")
link_flags="-shared-libsan -Wl,-rpath,$runtime_dir"
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B build-fuzz "${launcher[@]}" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DOAR_FUZZ=ON -DOAR_BUILD_TESTS=OFF -DOAR_BUILD_BENCHMARKS=OFF \
  -DOAR_PLUGIN_OPENCL=OFF -DOAR_PLUGIN_VULKAN=OFF \
  -DOAR_SANITIZE=address,undefined,fuzzer-no-link \
  -DCMAKE_EXE_LINKER_FLAGS="$link_flags" -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
  -DCMAKE_MODULE_LINKER_FLAGS="$link_flags" >/dev/null
cmake --build build-fuzz -j "$jobs" --target oar_fuzzers

names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for exe in build-fuzz/fuzz/fuzz_*; do names+=("${exe##*/fuzz_}"); done
fi

# The runtime is linked, not preloaded: its place in the library order is fine.
export ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p build-fuzz/fuzz-logs
run() {
  local name=$1 corpus=fuzz/corpus/$1 work=build-fuzz/fuzz-work/$1
  mkdir -p "$work" "$corpus"
  local dict=()
  if [ -f "fuzz/$name.dict" ]; then dict=("-dict=fuzz/$name.dict"); fi
  # The first folder takes new inputs; the seed corpus is only read.
  local rc=0
  "build-fuzz/fuzz/fuzz_$name" "${dict[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$corpus/" \
    "$work" "$corpus" >"build-fuzz/fuzz-logs/$name.log" 2>&1 || rc=$?
  echo "$rc" >"build-fuzz/fuzz-logs/$name.rc"
}

running=0
for name in "${names[@]}"; do
  run "$name" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n || true
    running=$((running - 1))
  fi
done
wait

failed=()
for name in "${names[@]}"; do
  log=build-fuzz/fuzz-logs/$name.log
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  corpus=$(find "fuzz/corpus/$name" -type f | wc -l)
  work=$(find "build-fuzz/fuzz-work/$name" -type f | wc -l)
  echo "fuzz $name: ${runs:-?} runs, ${speed:-?}/s, seed corpus $corpus, new inputs $work"
  if [ "$(cat "build-fuzz/fuzz-logs/$name.rc")" != 0 ]; then failed+=("$name"); fi
done
if [ ${#failed[@]} -ne 0 ]; then
  for name in "${failed[@]}"; do
    echo "---- fuzz $name FAILED; last lines of build-fuzz/fuzz-logs/$name.log:"
    tail -40 "build-fuzz/fuzz-logs/$name.log"
  done
  echo "fuzz: ${failed[*]} failed; the inputs are in fuzz/corpus/<name>/ (crash-*, timeout-*, oom-*)"
  exit 1
fi
echo "fuzz: ${#names[@]} fuzzers ran ${seconds} s each, no crash"
