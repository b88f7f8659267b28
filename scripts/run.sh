#!/usr/bin/env bash
# The main job: builds OAR, lists every plugin and device it finds, and
# certifies every plugin that has a device here with oar-conform. Reports go
# to build/conformance/<plugin>/ (sim: one per capability profile,
# build/conformance/sim-<profile>/), each with report.html, report.json and
# junit.xml; the verdict names the certification profile and its coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
./build/bin/oar list
cmake -DOAR_BIN=build/bin -DREPORT_ROOT=build/conformance -P scripts/certify_all.cmake
# PaddlePaddle training on each OAR device (adapters/paddle, docs/paddle.md), if built.
if [ -f build/lib/oar/paddle/libpaddle-custom-oar.so ]; then
  "${OAR_PADDLE_VENV:-$HOME/.cache/oar/paddle-venv}/bin/python" \
    adapters/paddle/tools/train_on_devices.py build
fi
echo "aarch64: scripts/test-arm.sh cross-builds OAR and certifies the cpu plugin under" \
  "qemu-aarch64 (core profile, ~8 min; report in build-arm/conformance/cpu-aarch64/)"
