#!/usr/bin/env bash
# The main job: builds OAR and lists every plugin it finds and every device
# they serve (certification of each plugin joins here with oar-conform).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build build -j "$(nproc)"
./build/bin/oar list
