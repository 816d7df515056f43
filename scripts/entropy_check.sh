#!/usr/bin/env bash
# One device lease for the entropy op, from binaries built on the CPU machine (build/ carried).
# Steps, in the order given; logs and results under $OUT (or ./out), a short table last:
#   tests   the entropy GPU tests (the 2-GPU one runs where two GPUs are visible)
#   tune    autotune --op entropy on the bench's sizes and 128^2 (r = 2, L = 16; TUNE_SHAPES,
#           TUNE_BUDGET in seconds for all of them) -> $OUT/entropy_tuned.db and
#           $OUT/entropy_shipped_<tag>.tsv (rows for cache/shipped/)
#   bench   bench/entropy -> $OUT/entropy_<tag>.json (TUNED_DB=$OUT/entropy_tuned.db when tuned)
set -uo pipefail
source "$(dirname "$0")/lease.sh"
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader | wc -l)
[ "$gpus" -gt 1 ] && tag="$tag-x$gpus"
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    tests)
      ./build/tests/tuned_gpu_tests --gtest_color=no --gtest_filter='Entropy.*' \
        > "$out/entropy_tests_$tag.log" 2>&1
      rc=$?
      summary+=("tests rc=$rc: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) |configs checked' "$out/entropy_tests_$tag.log" | tr '\n' ' ')")
      grep -E "^\[  FAILED|Failure" -A4 "$out/entropy_tests_$tag.log" | head -n 60 ;;
    tune)
      ./build/tools/autotune --op entropy --budget ${TUNE_BUDGET:-160} --seed 1 --db "$out/entropy_tuned.db" \
        --shape ${TUNE_SHAPES:-10240x10240x2x16,2560x2560x2x16,400x400x2x16,128x128x2x16} \
        > "$out/entropy_tune_$tag.txt" 2> "$out/entropy_tune_$tag.log"
      rc=$?
      ./build/tools/tunedb --db "$out/entropy_tuned.db" export --format shipped \
        > "$out/entropy_shipped_$tag.tsv"
      summary+=("tune rc=$rc: $(tail -n 12 "$out/entropy_tune_$tag.txt" | tr '\n' '|')") ;;
    bench)
      [ -f "$out/entropy_tuned.db" ] && export TUNED_DB="$out/entropy_tuned.db"
      ./build/bench/entropy --json "$out/entropy_$tag.json" > "$out/entropy_$tag.txt" 2>&1
      rc=$?
      summary+=("bench rc=$rc: $(cat "$out/entropy_$tag.txt" | tr '\n' '|')") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "== $step done in $(( $(date +%s) - start )) s"
done
print_summary " x$gpus"
