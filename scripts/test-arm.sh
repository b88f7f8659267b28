#!/usr/bin/env bash
# The aarch64 stage of CI: cross-builds OAR for aarch64 (Debian's
# g++-aarch64-linux-gnu, the sysroot of scripts/make-arm64-sysroot.sh) in
# build-arm/ and runs it under qemu-aarch64 through ctest's
# CMAKE_CROSSCOMPILING_EMULATOR: `oar list` and `oar info`, the unit tests that
# check architecture-dependent code, and oar-conform certifying the cpu plugin
# in the core profile (report in build-arm/conformance/cpu-aarch64/).
# Built: liboar, the cpu plugin, oar, oar-conform and those tests only; not the
# sim, opencl, vulkan and null plugins, MPI, Paddle, benchmarks.
# Usage: scripts/test-arm.sh [--full]
#   --full: then the whole suite under emulation as well (every operator and
#           dtype, the full profile; about an hour on 2 cores), report in
#           build-arm/conformance/cpu-aarch64-full/.
# OAR_ARM_BUILD=<dir> builds there instead of build-arm/.
# OAR_QEMU_CPU=<model> (qemu-aarch64 -cpu help) emulates another processor
# than qemu's `max`, e.g. neoverse-n1 (no bf16, no SVE) or cortex-a72 (no fp16).
# On a real aarch64 machine, see plugins/cpu/README.md: the same build without
# the toolchain file, and the same ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
build=${OAR_ARM_BUILD:-build-arm}  # another build folder, e.g. one of several checkouts
start=$SECONDS

scripts/make-arm64-sysroot.sh >/dev/null
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake -DOAR_QEMU_CPU="${OAR_QEMU_CPU:-}" \
  -DOAR_BUILD_BENCHMARKS=OFF -DOAR_PLUGIN_OPENCL=OFF -DOAR_PLUGIN_VULKAN=OFF \
  -DOAR_PLUGIN_SIM=OFF -DOAR_PLUGIN_NULL=OFF -DOAR_PLUGIN_CUDA=OFF -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON \
  -DOAR_PADDLE_PYTHON=/nonexistent >/dev/null
cmake --build "$build" -j "$jobs" --target oar_cli oar_conform oar_plugin_cpu \
  oar_cpu_cpuinfo_test oar_cpu_vmath_test oar_caching_allocator_test oar_plugin_sdk_test oar_reference_test
echo "test-arm: built in $((SECONDS - start)) s"

emulator=(qemu-aarch64 -L "$(scripts/make-arm64-sysroot.sh 2>/dev/null)")
if [ -n "${OAR_QEMU_CPU:-}" ]; then emulator+=(-cpu "$OAR_QEMU_CPU"); fi
"${emulator[@]}" "$build/bin/oar" list
"${emulator[@]}" "$build/bin/oar" info cpu:0

# native_dtypes follows the processor (docs/abi.md, "Native arithmetic"):
# a Cortex-A72 has no half-precision arithmetic, a Neoverse N1 has f16 but no
# bf16, qemu's max has both. The f16 and bf16 kernels are there on all three.
for expected in "cortex-a72:f64" "neoverse-n1:f16, f64, int8_dot" "max:f16, bf16, f64, int8_dot"; do
  model=${expected%%:*}
  info=$(OAR_PLUGIN_PROBE=0 qemu-aarch64 -L "$(scripts/make-arm64-sysroot.sh 2>/dev/null)" -cpu "$model" \
    "$build/bin/oar" info cpu:0)
  if ! grep -qE "^  native arithmetic +${expected#*:}\$" <<<"$info" ||
    ! grep -qE "^  dtypes \(beyond f32/int\) +f16, bf16, f64\$" <<<"$info"; then
    echo "test-arm: -cpu $model: expected native arithmetic '${expected#*:}' and dtypes f16, bf16, f64:" >&2
    echo "$info" >&2
    exit 1
  fi
  echo "test-arm: -cpu $model: native arithmetic ${expected#*:}"
done

ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1800 \
  -R '^(CpuInfoTest|VmathTest|CachingAllocatorTest|Sdk[A-Za-z]*Test|ReferenceTest|HalfTest|Bf16Test)\.|^(cpu_device_describes_aarch64|conformance_certifies_cpu_aarch64_core)$'
echo "test-arm: done in $((SECONDS - start)) s"

if [ "${1:-}" = "--full" ]; then
  "${emulator[@]}" "$build/bin/oar-conform" --plugin cpu --profile full \
    --report "$build/conformance/cpu-aarch64-full"
fi
