#!/usr/bin/env bash
# One device lease for the transpose op, from binaries built on the CPU machine (build/ carried).
# Steps, in the order given; logs and results under $OUT (or ./out), a short table last:
#   tests   the transpose GPU tests (and the end-to-end autotune test)
#   tune    autotune --op transpose on the benchmark's shapes -> $OUT/transpose_tuned.db and
#           $OUT/transpose_shipped_<tag>.tsv (rows for cache/shipped/)
#   bench   transpose_vs_copy -> $OUT/transpose_<tag>.json
set -uo pipefail
source "$(dirname "$0")/lease.sh"
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    tests)
      ./build/tests/tuned_gpu_tests --gtest_color=no \
        --gtest_filter='Transpose.*:AutotuneEndToEnd.TunesRecords*' > "$out/transpose_tests_$tag.log" 2>&1
      rc=$?
      summary+=("tests rc=$rc: $(grep -E '^\[  (PASSED|FAILED) |read-only' "$out/transpose_tests_$tag.log" | tr '\n' ' ')")
      grep -E "^\[  FAILED|Failure" -A3 "$out/transpose_tests_$tag.log" | head -n 40 ;;
    tune)
      ./build/tools/autotune --op transpose --budget 180 --seed 1 --db "$out/transpose_tuned.db" \
        --shape 16384x16384,8192x8192,4096x4096,2048x2048,1024x1024,1000x1000,4097x4097 \
        --shape 16384x1023,333x77777,1x4097,4097x3 > "$out/transpose_tune_$tag.txt" 2> "$out/transpose_tune_$tag.log"
      rc=$?
      ./build/tools/tunedb --db "$out/transpose_tuned.db" export --format shipped \
        > "$out/transpose_shipped_$tag.tsv"
      summary+=("tune rc=$rc: $(tail -n 14 "$out/transpose_tune_$tag.txt" | tr '\n' '|')") ;;
    bench)
      ./build/bench/transpose_vs_copy --json "$out/transpose_$tag.json" > "$out/transpose_$tag.txt" 2>&1
      rc=$?
      summary+=("bench rc=$rc: $(cat "$out/transpose_$tag.txt" | tr '\n' '|')") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "== $step done in $(( $(date +%s) - start )) s"
done
print_summary
