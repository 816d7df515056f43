#!/usr/bin/env bash
# Builds tuned and runs the main job: autotune --device 0 --op gemm (extra arguments are passed on,
# e.g. --shape 4096x4096x4096 --budget 300).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" --target autotune tunedb
exec ./build/tools/autotune --device 0 --op gemm "$@"
