#!/usr/bin/env bash
# Certifies OAR's GPU plugin on a machine with an NVIDIA GPU, its driver and the
# CUDA toolkit: builds OAR with the cuda plugin (other GPU plugins off), runs
# `oar list`, the cuda plugin's own tests, `oar-conform --plugin cuda` and
# the issue-20 benchmarks (bench/cuda_bench.cc: OAR vs the driver API and
# cuBLAS called directly, interleaved), and writes everything under one
# report folder.
#
#   scripts/certify-gpu.sh [REPORT_DIR]     (default: ./oar-gpu-report)
#   scripts/certify-gpu.sh hip [REPORT_DIR]  the same for the hip plugin on an AMD
#       GPU or Hygon DCU with ROCm 5.x (build-gpu-hip; all gfx targets; its
#       operators are the cuda plugin's, so are its expectations,
#       plugins/cuda/conformance.json; no benchmarks yet)
#   scripts/certify-gpu.sh level_zero [REPORT_DIR]  the same for the level_zero
#       plugin on an Intel GPU with its Level Zero driver (build-gpu-level_zero;
#       its own expectations, plugins/level_zero/conformance.json; no benchmarks yet)
#   BUILD_DIR=...   the build folder (default build-gpu)
#   JOBS=...        parallel build jobs (default: all cores)
#   BENCH_REPETITIONS=N   repetitions of each benchmark (default 5; 0 skips them)
#
# Exit status: oar-conform's verdict (0 certified), or 2 if no GPU is seen.
set -euo pipefail
PLUGIN=cuda
if [[ "${1:-}" == cuda || "${1:-}" == hip || "${1:-}" == level_zero ]]; then PLUGIN="$1"; shift; fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
REPORT="$(mkdir -p "${1:-oar-gpu-report}" && cd "${1:-oar-gpu-report}" && pwd)"
BUILD="${BUILD_DIR:-$ROOT/build-gpu$([[ $PLUGIN == cuda ]] || echo "-$PLUGIN")}"
JOBS="${JOBS:-$(nproc)}"

command -v nvidia-smi >/dev/null && nvidia-smi > "$REPORT/nvidia-smi.txt" 2>&1 || true
command -v rocminfo >/dev/null && rocminfo > "$REPORT/rocminfo.txt" 2>&1 || true
if [[ $PLUGIN == hip ]]; then
  plugin_flags=(-DOAR_PLUGIN_CUDA=OFF -DOAR_PLUGIN_HIP=ON -DOAR_HIP_ARCHITECTURES=all)
  targets=(oar_plugin_hip oar_hip_plugin_test oar_hip_fake_runtime)
elif [[ $PLUGIN == level_zero ]]; then
  plugin_flags=(-DOAR_PLUGIN_CUDA=OFF -DOAR_PLUGIN_HIP=OFF -DOAR_PLUGIN_LEVEL_ZERO=ON)
  targets=(oar_plugin_level_zero oar_level_zero_plugin_test oar_level_zero_fake_loader)
else
  plugin_flags=(-DOAR_PLUGIN_CUDA=ON -DOAR_CUDA_ARCHITECTURES=all -DOAR_PLUGIN_HIP=OFF)
  targets=(oar_plugin_cuda oar_cuda_plugin_test oar_cuda_fake_driver oar_cuda_fake_cublas
           oar_bench_cuda)
fi
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${plugin_flags[@]}" -DOAR_PLUGIN_OPENCL=OFF -DOAR_PLUGIN_VULKAN=OFF \
  -DOAR_BUILD_BENCHMARKS=ON | tee "$REPORT/configure.txt"
if grep -q "$PLUGIN plugin: skipped" "$REPORT/configure.txt"; then
  echo "certify-gpu: the $PLUGIN plugin was not configured (see $REPORT/configure.txt)" >&2
  exit 2
fi
ninja -C "$BUILD" -j "$JOBS" oar_cli oar_conform "${targets[@]}" | tail -n 3

export OAR_PLUGINS="$BUILD/share/oar/plugins.d/$PLUGIN.json"
"$BUILD/bin/oar" list | tee "$REPORT/oar-list.txt"
"$BUILD/bin/oar" list --json > "$REPORT/oar-list.json"
if grep -q "$PLUGIN .* 0 device(s)" "$REPORT/oar-list.txt"; then
  echo "certify-gpu: the $PLUGIN plugin sees no GPU (the reason is above)" >&2
  exit 2
fi
(cd "$BUILD" && ctest -R "${PLUGIN}_plugin" --output-on-failure) | tee "$REPORT/ctest-$PLUGIN.txt"

set +e
"$BUILD/bin/oar-conform" --plugin "$PLUGIN" \
  --expectations "$ROOT/plugins/$([[ $PLUGIN == level_zero ]] && echo level_zero || echo cuda)/conformance.json" --report "$REPORT/conformance" \
  2>&1 | tee "$REPORT/oar-conform.txt"
verdict=${PIPESTATUS[0]}
# The benchmarks: medians of interleaved runs and their ratios (the issue's
# targets: EmptyOp ratio <= 1.10; Copy1GiB and Matmul8192 ratio >= 0.95).
if [[ $PLUGIN == cuda && "${BENCH_REPETITIONS:-5}" != 0 ]]; then
  uptime > "$REPORT/bench-uptime.txt"
  "$BUILD/bin/oar_bench_cuda" --benchmark_repetitions="${BENCH_REPETITIONS:-5}" \
    --benchmark_report_aggregates_only=true --benchmark_out="$REPORT/bench-cuda.json" \
    --benchmark_out_format=json 2>&1 | tee "$REPORT/bench-cuda.txt"
fi
set -e
echo "certify-gpu: oar-conform exit $verdict; reports in $REPORT"
exit "$verdict"
