#!/usr/bin/env bash
# Issue 29's GPU checks, from binaries carried in carry/bins.tar.zst (scripts/pack_bins.sh
# build/tools/autotune build/tools/tunedb build/tests/tuned_gpu_tests build/examples/gemm_example
# build/bench/runtime_soak). Each argument one step; logs and results under $OUT; a short table
# last.
#   states       the cache states test (TUNED_DB in every state, three ops in fresh processes) and
#                eight processes with first-use tuning starting together on a new database
#   soak[:N]     runtime_soak: N calls (default 1000000) on distinct shapes, 6 threads; host memory
#   tests:F      GPU tests matching the gtest filter F
#   rss          peak memory of autotune and tunedb on an immediate error and on --version
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT}"
[ -n "${SKIP_UNPACK:-}" ] || carry/zstd -d --long=30 -c carry/bins.tar.zst | tar -xf -
export LD_LIBRARY_PATH="$PWD/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
tag=$(echo "$gpu" | tr 'A-Z' 'a-z' | grep -oE 'h100|h200' | head -1)
echo "device: $gpu" | tee "$OUT/device.txt"
summary=()
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    states)
      build/tests/tuned_gpu_tests --gtest_color=no --gtest_filter='CacheStatesGpu.*' \
        > "$OUT/gpu_tests_cache_states_${tag}.log" 2>&1
      summary+=("states rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests_cache_states_${tag}.log" | tr '\n' ' ')") ;;
    soak|soak:*)
      calls=1000000
      [ "$step" = soak ] || calls=${step#soak:}
      TUNED_DB="$PWD/soak-missing/tuned.db" build/bench/runtime_soak --calls "$calls" --threads 6 \
        --out "$OUT/runtime_soak_${tag}.json" > "$OUT/runtime_soak_${tag}.log" 2>&1
      summary+=("soak rc=$?: $(grep -E '^(rss|growth|calls)' "$OUT/runtime_soak_${tag}.log" | tr '\n' ' ')") ;;
    tests:*)
      build/tests/tuned_gpu_tests --gtest_color=no --gtest_filter="${step#tests:}" \
        > "$OUT/gpu_tests_issue29_${tag}.log" 2>&1
      summary+=("tests rc=$?: $(grep -E '^\[  (PASSED|FAILED|  FAILED) ' "$OUT/gpu_tests_issue29_${tag}.log" | tr '\n' ' ')") ;;
    rss)
      [ -x /usr/bin/time ] || { summary+=("rss: no /usr/bin/time on this machine"); continue; }
      for command in "build/tools/autotune --version" "build/tools/autotune --config /dev/zero" \
                     "build/tools/tunedb --version" "build/tools/tunedb --db /nonexistent best"; do
        /usr/bin/time -f "%e s %M KB" $command > /dev/null 2> "$OUT/rss.tmp"
        summary+=("rss '$command': $(tail -1 "$OUT/rss.tmp")")
      done
      rm -f "$OUT/rss.tmp" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  summary[-1]+=" ($(( $(date +%s) - start )) s)"
done
printf '%s\n' "${summary[@]}" | tee "$OUT/summary.txt"
