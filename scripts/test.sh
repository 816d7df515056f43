#!/usr/bin/env bash
# Builds tuned and runs every test: CPU tests always; GPU tests (ctest label gpu) run where a GPU
# is present and report themselves skipped, with the reason, where none is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
# ctest hides the output of skipped tests: say once why the GPU tests were skipped, if they were.
if ./build/tests/tuned_gpu_tests --gtest_filter='TunedGemm.KZeroGivesBetaTimesC' 2>&1 |
    grep -m1 "GPU test skipped"; then
  echo "(the GPU tests above were skipped for that reason; they run where a CUDA device is present)"
fi
