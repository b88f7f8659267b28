#!/usr/bin/env bash
# Runs OAR's benchmarks and writes one JSON of results and a self-contained
# HTML page with a chart per group of bench/targets.json (docs/performance.md,
# "How to run the benchmarks").
#
#   scripts/bench.sh [--build DIR] [--out DIR] [--quick] [--only NAMES] [--min-time S]
#                    [--timeout S]
#
#   --build DIR   the build to measure (default: build); programs it lacks
#                 (opencl, vulkan, the Paddle adapter) are left out, and the
#                 page says "not measured"
#   --out DIR     where results.json, report.html and each program's log go
#                 (default: bench-results inside the build folder)
#   --quick       a smoke run: a few cheap benchmarks, 2 repetitions (tests)
#   --only NAMES  comma-separated programs to run (default: all), e.g.
#                 oar_bench,paddle; results of the others already in DIR stay
#   --min-time S  Google Benchmark's --benchmark_min_time (default 0.5 s of
#                 the benchmark's clock, CPU time for most: on a machine
#                 whose load leaves a program a tenth of a core, a run takes
#                 ten times longer; a shorter S keeps it bounded)
#   --timeout S   stop a program that runs longer than S seconds (its
#                 results are then missing from the page; default: none)
#
# Repetitions are those docs/performance.md uses: oar_bench 9, opencl 5,
# vulkan 3, the loaded variants 3, the pointer lookup 5, bench/paddle_bench.py
# 5; Google Benchmark reports the median of them (and mean, stddev, cv).
# Not run here: oar_soak (a pass/fail soak, minutes on sim) and oar-comm-bench
# (needs mpirun); docs/performance.md shows how to run them.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
build="$root/build"
out=""
quick=0
only=""
min_time=""
timeout_s=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build="$(cd "$2" && pwd)" || exit 2; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --quick) quick=1; shift ;;
    --only) only="$2"; shift 2 ;;
    --min-time) min_time="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
out="${out:-$build/bench-results}"
mkdir -p "$out/json" || exit 2
out="$(cd "$out" && pwd)"
# A full run starts afresh; --only re-measures its programs and keeps the
# others' last results in the merged JSON.
[ -n "$only" ] || rm -f "$out"/json/*.json

wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }
# limited COMMAND...: COMMAND, stopped after --timeout seconds if given.
limited() { if [ -n "$timeout_s" ]; then timeout "$timeout_s" "$@"; else "$@"; fi; }
loadavg() { cut -d' ' -f1-3 /proc/loadavg; }

load_start="$(loadavg)"
revision="$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [ -n "$(git -C "$root" status --porcelain --untracked-files=no 2>/dev/null)" ]; then
  revision="$revision with uncommitted changes"
fi
failed=()

# run_gb NAME REPETITIONS QUICK_FILTER [extra args]: one Google Benchmark
# program of the build, its JSON into $out/json/NAME.json.
run_gb() {
  local name="$1" reps="$2" quick_filter="$3"
  shift 3
  local bin="$build/bin/$name"
  wanted "$name" || return 0
  rm -f "$out/json/$name.json" "$out/json/$name.min_time" "$out/json/$name.revision"
  if [ ! -x "$bin" ]; then
    echo "bench.sh: $name: not built in $build, left out"
    return 0
  fi
  local args=(--benchmark_out="$out/json/$name.json" --benchmark_out_format=json
              --benchmark_report_aggregates_only=true)
  if [ "$quick" = 1 ]; then
    [ -n "$quick_filter" ] || return 0
    args+=(--benchmark_repetitions=2 --benchmark_min_time=0.01 --benchmark_filter="$quick_filter")
  else
    args+=(--benchmark_repetitions="$reps")
    if [ -n "$min_time" ]; then
      args+=(--benchmark_min_time="$min_time")
      echo "$min_time" > "$out/json/$name.min_time"
    fi
  fi
  echo "bench.sh: $name ($(date -u +%H:%M:%S), load $(loadavg))"
  echo "$revision" > "$out/json/$name.revision"
  if ! limited "$bin" "${args[@]}" "$@" > "$out/$name.log" 2>&1; then
    echo "bench.sh: $name failed, see $out/$name.log" >&2
    failed+=("$name")
    python3 -m json.tool "$out/json/$name.json" > /dev/null 2>&1 || rm -f "$out/json/$name.json"
  fi
}

run_gb oar_bench 9 'BM_DirectKernelCall|BM_DispatchEmptyKernel$|BM_MallocFree|BM_CachedAllocFree|BM_DeviceAllocateFree'
run_gb oar_bench_paddle_address 5 'BM_PaddlePointerLookup/16$'
run_gb oar_bench_opencl 5 ''
run_gb oar_bench_opencl_loaded 3 ''
run_gb oar_bench_vulkan 3 ''
run_gb oar_bench_vulkan_loaded 3 ''

# bench/paddle_bench.py: Paddle's Python with the adapter of this build on
# the cpu plugin alone.
python="${OAR_PADDLE_PYTHON:-${OAR_PADDLE_VENV:-$HOME/.cache/oar/paddle-venv}/bin/python}"
if wanted paddle; then
  if [ ! -x "$python" ] || [ ! -d "$build/lib/oar/paddle" ] ||
     [ ! -e "$build/lib/liboar_bench_paddle_kernels.so" ]; then
    echo "bench.sh: paddle: no Paddle environment ($python) or adapter in $build, left out"
  else
    rm -f "$out/json/paddle.json"
    echo "$revision" > "$out/json/paddle.revision"
    args=(--build "$build" --out "$out/json/paddle.json")
    [ "$quick" = 1 ] && args+=(--quick --kernels add_16Mi --models mlp)
    echo "bench.sh: paddle ($(date -u +%H:%M:%S), load $(loadavg))"
    if ! CUSTOM_DEVICE_ROOT="$build/lib/oar/paddle" \
       OAR_PLUGINS="$build/share/oar/plugins.d/cpu.json" \
       limited "$python" "$root/bench/paddle_bench.py" "${args[@]}" > "$out/paddle.log" 2>&1; then
      echo "bench.sh: paddle failed, see $out/paddle.log" >&2
      failed+=(paddle)
      rm -f "$out/json/paddle.json"
    fi
  fi
fi

load_end="$(loadavg)"
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)"

# Every program's results in the folder: this run's, and with --only the
# others' from before.
inputs=()
for f in "$out"/json/*.json; do
  [ -e "$f" ] && inputs+=("$(basename "$f" .json)=$f")
done
if [ "${#inputs[@]}" -eq 0 ]; then
  echo "bench.sh: nothing was measured" >&2
  exit 1
fi
python3 "$root/bench/report.py" merge "$out/results.json" "${inputs[@]}" --context \
  "date=$(date -u +%Y-%m-%dT%H:%M:%SZ)" "host=$(hostname)" "cpu=$cpu" "num_cpus=$(nproc)" \
  "load_avg_start=$load_start" "load_avg_end=$load_end" "git_revision=$revision" \
  "quick=$quick" "build=$build" || exit 1
python3 "$root/bench/report.py" html "$out/results.json" "$out/report.html" || exit 1
echo "bench.sh: wrote $out/results.json and $out/report.html"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "bench.sh: failed: ${failed[*]}" >&2
  exit 1
fi
