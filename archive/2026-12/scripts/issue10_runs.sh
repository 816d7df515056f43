#!/usr/bin/env bash
# Issue 10's measurements on the GPU machine, from binaries carried in carry/bins.tar.zst
# (build/ outputs; see the closing notes): each argument one step, logs and JSON under $OUT.
#   overhead   gemm_call_overhead (per-call host cost on tiny shapes)
#   tests      the GEMM GPU tests (families, public API against cuBLAS, capture, autotune)
#   families   the named family shapes, autotune 60 s each
#   seed201:A-B  autotune seed 201's shapes A..B (1-based) 60 s each into out/seed201.db
#   compare201 seed 201's 16 shapes compared with cuBLAS from out/seed201.db (no tuning)
#   cstage     TT 2245x3167x47 (seed 201's worst): CSTAGE 0 and 1 on a narrowed MMA space
#              (exhaustive), then the whole space guided for 60 s
#   suite      gemm_vs_cublas, shipped data only
#   random     gemm_random seeds 101-103, shipped data only, with first calls
set -uo pipefail
export LD_LIBRARY_PATH=$PWD/carry:${LD_LIBRARY_PATH:-}
[ -x build/bench/gemm_families ] || carry/zstd -d -c carry/bins.tar.zst | tar -xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/device.txt"
mkdir -p out
summary=()
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    overhead) build/bench/gemm_call_overhead > "$OUT/overhead.txt" 2>&1
      summary+=("overhead rc=$?") ;;
    tests) build/tests/tuned_gpu_tests --gtest_color=no \
        --gtest_filter='GemmFamilies.*:TunedGemm.*:GraphCapture.*:AutotuneEndToEnd.*:DeviceCheckCompare.*:GemmLimits.*' > "$OUT/gpu_tests.log" 2>&1
      summary+=("tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests.log" | tr '\n' ' ')") ;;
    families) build/bench/gemm_families --no-seeded --budget 60 --json "$OUT/families.json" > "$OUT/families.txt" 2>&1
      summary+=("families rc=$?: $(grep geometric "$OUT/families.txt")") ;;
    seed201:*)
      IFS=:- read -r _ first last <<< "$step"
      build/bench/gemm_families --print-shapes --no-family | sed -n "${first},${last}p" |
        while read -r _ _ layout shape; do
          build/tools/autotune --op gemm --layout "$layout" --shape "$shape" --budget 60 \
            --seed 1 --db out/seed201.db < /dev/null >> "$OUT/seed201_autotune.txt" 2>> "$OUT/seed201_progress.txt"
        done
      cp out/seed201.db "$OUT/seed201.db"
      summary+=("seed201 $first-$last tuned") ;;
    compare201) build/bench/gemm_families --no-family --skip-tuning --db out/seed201.db \
        --budget 60 --json "$OUT/seed201.json" > "$OUT/seed201.txt" 2>&1
      summary+=("seed201 rc=$?: $(grep geometric "$OUT/seed201.txt")") ;;
    cstage)
      printf '%s\n' 'strategy = "exhaustive"' '[space]' 'GEMV = [0]' 'MMA = [1]' 'BM = [64, 128]' \
        'BN = [32, 64]' 'BK = [16]' 'VEC = [1]' 'PIPE = [2, 3]' 'SWZ = [0]' 'SPLITK = [1]' 'TAIL = [0]' \
        'PACK = [0]' 'PRETB = [0]' 'CSTAGE = [0, 1]' > "$OUT/narrow.toml"
      build/tools/autotune --op gemm --layout TT --shape 2245x3167x47 --config "$OUT/narrow.toml" \
        --budget 90 --db "$OUT/narrow.db" > "$OUT/narrow.txt" 2>&1
      build/tools/autotune --op gemm --layout TT --shape 2245x3167x47 --budget 60 \
        --db "$OUT/full.db" > "$OUT/full.txt" 2>&1
      summary+=("cstage rc=$?: $(grep -A1 '^shape' "$OUT/full.txt" | tail -1 | cut -c1-90)") ;;
    suite) build/bench/gemm_vs_cublas --no-user-db --json "$OUT/suite.json" > "$OUT/suite.txt" 2>&1
      summary+=("suite rc=$?: $(grep -i geometric "$OUT/suite.txt" | tail -1)") ;;
    random) build/bench/gemm_random --no-user-db --json "$OUT/random.json" > "$OUT/random.txt" 2>&1
      summary+=("random rc=$?: $(grep -i geometric "$OUT/random.txt" | tail -1)") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  summary[-1]+=" ($(( $(date +%s) - start )) s)"
done
printf '%s\n' "${summary[@]}"
