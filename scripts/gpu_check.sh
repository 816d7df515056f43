#!/usr/bin/env bash
# Everything one device lease checks, from binaries built on the CPU machine (build/ carried):
# the GPU tests, then autotune on 4096^3 against cuBLAS. Logs go to $OUT (or ./out); a short
# table comes last.
#   scripts/gpu_check.sh [BUDGET_SECONDS]
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
budget=${1:-300}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$out/device.txt"
export TUNED_DB="$out/tuned.db"

./build/tests/tuned_gpu_tests --gtest_color=no 2>&1 | tee "$out/gpu_tests.log"
gpu_rc=${PIPESTATUS[0]}

start=$(date +%s)
./build/tools/autotune --device 0 --op gemm --shape 4096x4096x4096 --budget "$budget" \
  --db "$out/tuned.db" 2>"$out/autotune_progress.log" | tee "$out/autotune.log"
tune_rc=${PIPESTATUS[0]}
end=$(date +%s)
tail -n 3 "$out/autotune_progress.log"
./build/tools/tunedb --db "$out/tuned.db" export --format json > "$out/tunedb_export.json"

echo
echo "== summary ($(head -n 2 "$out/device.txt" | tail -n 1)) =="
grep -E "^\[  (PASSED|FAILED|SKIPPED) \]|tests ran" "$out/gpu_tests.log" | head -n 20
echo "gpu tests rc=$gpu_rc; autotune rc=$tune_rc, wall $((end - start)) s"
grep -A2 "^shape" "$out/autotune.log"
