#!/usr/bin/env bash
# The GEMM benchmark pipeline on one GPU, from binaries built on the CPU machine (build/ carried).
# Steps, in the order given:
#   tests         the GPU tests (ctest label gpu's binary)
#   tune:L:S[:SHAPES]  autotune the suite's shapes of layout L (or SHAPES, comma-separated) with S
#                 seconds in all, into $OUT/bench.db (continuing build/bench.db.in when carried)
#   bench         gemm_vs_cublas with $OUT/bench.db, then the ladder -> $OUT/gemm_<tag>.json,
#                 $OUT/ladder_<tag>.json/.md
#   shipped       gemm_vs_cublas with no user database (shipped defaults only)
#                 -> $OUT/gemm_shipped_<tag>.json
#   export        $OUT/bench.db's best configs as rows for cache/shipped/ -> $OUT/shipped_<tag>.tsv
#   sides:A:B     two libtuned.so builds side by side (folders A and B holding libtuned.so.0.1, e.g.
#                 before and after a refit of the shipped tables), shipped data only: gemm_networks
#                 A, B, A, B, then gemm_random seeds 101-103 and 111-113 (--min-gflop 1) and
#                 gemm_vs_cublas with each -> $OUT/sides_{a,b}_*.json
# e.g. scripts/gemm_bench.sh tests tune:NN:400 bench export
set -uo pipefail
source "$(dirname "$0")/lease.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >> "$out/device.txt"
db="$out/bench.db"
[ -f build/bench.db.in ] && [ ! -f "$db" ] && cp build/bench.db.in "$db"  # carried, to continue
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    tests)
      ./build/tests/tuned_gpu_tests --gtest_color=no > "$out/gpu_tests.log" 2>&1
      rc=$?
      summary+=("tests rc=$rc: $(grep -E '^\[  (PASSED|FAILED) ' "$out/gpu_tests.log" | tr '\n' ' ')")
      grep -E "FAILED|Failure" -A3 "$out/gpu_tests.log" | head -n 40 ;;
    tune:*)
      IFS=: read -r _ layout seconds shapes <<< "$step"
      [ -n "$shapes" ] || shapes=$(./build/bench/gemm_vs_cublas --print-shapes "$layout")
      ./build/tools/autotune --device 0 --op gemm --layout "$layout" --shape "$shapes" \
        --budget "$seconds" --seed 1 --db "$db" 2>> "$out/autotune_progress.log" \
        | tee -a "$out/autotune_$tag.txt"
      rc=${PIPESTATUS[0]}
      summary+=("tune $layout rc=$rc") ;;
    bench)
      ./build/bench/gemm_vs_cublas --db "$db" --json "$out/gemm_$tag.json" | tee "$out/gemm_$tag.txt"
      rc=${PIPESTATUS[0]}
      ./build/bench/gemm_ladder --db "$db" --json "$out/ladder_$tag.json" \
        --markdown "$out/ladder_$tag.md" | tee -a "$out/gemm_$tag.txt"
      summary+=("bench rc=$rc ladder rc=${PIPESTATUS[0]}: $(grep '^geometric' "$out/gemm_$tag.txt")") ;;
    shipped)
      ./build/bench/gemm_vs_cublas --no-user-db --json "$out/gemm_shipped_$tag.json" \
        | tee "$out/gemm_shipped_$tag.txt"
      summary+=("shipped rc=${PIPESTATUS[0]}: $(grep '^geometric' "$out/gemm_shipped_$tag.txt")") ;;
    export)
      ./build/tools/tunedb --db "$db" export --format shipped --op gemm > "$out/shipped_$tag.tsv"
      summary+=("export rc=$? $(grep -vc '^#' "$out/shipped_$tag.tsv") rows") ;;
    sides:*)
      IFS=: read -r _ side_a side_b <<< "$step"
      side() {  # SIDE NAME BENCH ARGS...: one benchmark with side's library, its last lines kept
        local lib=$side_a
        [ "$1" = b ] && lib=$side_b
        LD_LIBRARY_PATH="$(realpath "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "./build/bench/$3" \
          --no-user-db "${@:4}" --json "$out/sides_$1_$2.json" > "$out/sides_$1_$2.txt" 2>&1
        summary+=("  $1 $2 rc=$?: $(grep -iE 'time-weighted|worst' "$out/sides_$1_$2.txt" | tail -n 2 | tr '\n' ' ' | cut -c1-160)")
      }
      for run in a1 b1 a2 b2; do side "${run%?}" "networks${run#?}" gemm_networks; done
      for s in a b; do
        side $s random gemm_random --seeds 101,102,103
        side $s random_large gemm_random --seeds 111,112,113 --min-gflop 1 --no-first-call
        side $s vs_cublas gemm_vs_cublas
      done
      summary+=("sides $side_a | $side_b") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  summary[-1]+=" ($(( $(date +%s) - start )) s)"
done
print_summary
