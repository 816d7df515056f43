#!/usr/bin/env bash
# One device lease for shapes nobody tuned (issues 7 and 10), from binaries built on the CPU machine
# (build/ carried). Steps, in the order given; logs and results under $OUT (or ./out), a short
# table last:
#   tests        the GPU tests
#   gemvsweep    gemm_sweep --gemv: the matrix-vector configs on the shapes with m or n of 1 of
#                the committed sweeps (seeds 1-60, 81-112 and the grid; hard families of
#                1000-1099) -> $OUT/gemm_sweep_<tag>_gemv.tsv.gz
#   random       gemm_random, seeds 101-103, empty user database (shipped data only), with the
#                fresh-process first call of every shape -> $OUT/gemm_random_<tag>.json
#   firstuse     gemm_random with TUNED_TUNING=first-use on a fresh database
#                -> $OUT/gemm_random_first_use_<tag>.json
#   suite        gemm_vs_cublas --no-user-db -> $OUT/gemm_shipped_<tag>.json
#   extra        gemm_random on other seeds (201-203), shipped data only -> $OUT/gemm_random_other_<tag>.json
#   families     gemm_families (issue 10): seed 201 and the named family shapes, each tuned by
#                autotune for BUDGET s (default 60) -> $OUT/gemm_families_<tag>.json, $OUT/families.db
#   scripts/untuned_check.sh tests random firstuse suite
set -uo pipefail
source "$(dirname "$0")/lease.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >> "$out/device.txt"
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    tests)
      ./build/tests/tuned_gpu_tests --gtest_color=no > "$out/gpu_tests_$tag.log" 2>&1
      rc=$?
      summary+=("tests rc=$rc: $(grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_tests_$tag.log" | tr '\n' ' ')")
      grep -E "^\[  FAILED|Failure" -A3 "$out/gpu_tests_$tag.log" | head -n 40 ;;
    gemvsweep)
      ./build/bench/gemm_sweep --gemv --grid --seeds 1-60,81-112 --out /tmp/gemv_a.tsv \
        2> "$out/gemv_sweep.log"
      rc=$?
      ./build/bench/gemm_sweep --gemv --hard-families --seeds 1000-1099 --out /tmp/gemv_b.tsv \
        2>> "$out/gemv_sweep.log"
      rc=$(( rc | $? ))
      { cat /tmp/gemv_a.tsv; grep -v -e '^#' -e '^layout' /tmp/gemv_b.tsv; } |
        gzip -9 > "$out/gemm_sweep_${tag}_gemv.tsv.gz"
      summary+=("gemvsweep rc=$rc: $(grep -- '->' "$out/gemv_sweep.log" | tr '\n' ' ')") ;;
    random)
      ./build/bench/gemm_random --no-user-db --json "$out/gemm_random_$tag.json" \
        > "$out/gemm_random_$tag.txt" 2>&1
      rc=$?
      summary+=("random rc=$rc: $(tail -n 8 "$out/gemm_random_$tag.txt" | tr '\n' ' ')") ;;
    firstuse)
      ./build/bench/gemm_random --first-use --no-first-call \
        --json "$out/gemm_random_first_use_$tag.json" > "$out/gemm_random_first_use_$tag.txt" 2>&1
      rc=$?
      summary+=("firstuse rc=$rc: $(tail -n 8 "$out/gemm_random_first_use_$tag.txt" | tr '\n' ' ')") ;;
    suite)
      ./build/bench/gemm_vs_cublas --no-user-db --json "$out/gemm_shipped_$tag.json" \
        > "$out/gemm_shipped_$tag.txt" 2>&1
      rc=$?
      summary+=("suite rc=$rc: $(grep '^geometric' "$out/gemm_shipped_$tag.txt")") ;;
    extra)
      ./build/bench/gemm_random --no-user-db --seeds 201,202,203 --no-first-call \
        --json "$out/gemm_random_other_$tag.json" > "$out/gemm_random_other_$tag.txt" 2>&1
      rc=$?
      summary+=("extra rc=$rc: $(tail -n 6 "$out/gemm_random_other_$tag.txt" | tr '\n' ' ')") ;;
    families)
      ./build/bench/gemm_families --budget "${BUDGET:-60}" --db "$out/families.db" \
        --json "$out/gemm_families_$tag.json" > "$out/gemm_families_$tag.txt" 2>&1
      rc=$?
      summary+=("families rc=$rc: $(tail -n 1 "$out/gemm_families_$tag.txt")") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  summary[-1]+=" ($(( $(date +%s) - start )) s)"
done
print_summary
