#!/usr/bin/env bash
# Builds tuned and runs every test: CPU tests always; GPU tests (ctest label gpu) run where a GPU
# is present and report themselves skipped, with the reason, where none is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
