#!/usr/bin/env bash
# Installs every Debian 12 package that OAR's build, tests and benchmarks need.
# Safe to run again: apt-get skips what is already there.
set -euo pipefail

packages=(
  # toolchain and build
  build-essential cmake ninja-build pkg-config binutils clang-format
  # core dependencies
  libboost-dev nlohmann-json3-dev libcli11-dev libfmt-dev libdlpack-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # scripts/fuzz.sh: clang 15 (libFuzzer and the sanitizer runtimes come with its
  # libclang-common-15-dev) and its OpenMP, for the cpu plugin
  clang-15 libomp-15-dev
  # oar-conform's signed bundles: SHA-256 and Ed25519, tar.gz
  libssl-dev libarchive-dev
  # the cpu plugin: BLAS for matmul and conv2d; oneDNN's sgemm for f32 GEMMs on
  # x86-64 (plugins/cpu/CMakeLists.txt, OAR_CPU_SGEMM; about 7 MB download)
  libopenblas-dev libdnnl-dev
  # the opencl plugin: ICD loader and headers; PoCL is the OpenCL device here
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd
  # the vulkan plugin: loader, shader compiler; Mesa's lavapipe is the device
  # here, the Khronos validation layer checks the plugin's API use
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers
  # the level_zero plugin: the Level Zero loader's headers (the loader is
  # opened at run time) and the opencl kernels' SPIR-V build: clang-15 above,
  # llvm-spirv, spirv-val (spirv-tools)
  libze-dev llvm-spirv-15 spirv-tools
  # collectives (liboar_comm, oar::Communicator): Open MPI's mpirun and headers.
  # As root, mpirun needs --allow-run-as-root (or OMPI_ALLOW_RUN_AS_ROOT=1 and
  # OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1), and more ranks than cores need
  # --oversubscribe (tests/collective sets both through the environment)
  openmpi-bin libopenmpi-dev
  # adapters/paddle: scripts/install-paddle.sh makes a virtual environment
  python3-venv
  # scripts/bench.sh's HTML report is checked in a headless browser (ctest
  # bench_report_renders_in_browser); about 80 MB download, 290 MB installed
  chromium
  # scripts/test-arm.sh: the aarch64 cross compiler and qemu-aarch64, which runs
  # its tests (the arm64 libraries: scripts/make-arm64-sysroot.sh)
  g++-aarch64-linux-gnu qemu-user
  # the hip plugin: hipcc (HIP on clang 15, with the ROCm device libraries) and
  # the HIP headers; the plugin loads the HIP runtime only on a GPU machine
  hipcc libamdhip64-dev
)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  echo "install-deps: installing ${missing[*]}"
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# PaddlePaddle for adapters/paddle, in a virtual environment outside the tree.
"$(dirname "$0")/install-paddle.sh"
