#!/usr/bin/env bash
# Issue 31's measurements on the GPU machine, from binaries carried in carry/bins.tar.zst (packed by
# scripts/pack_bins.sh): each argument one step, logs under $OUT.
#   wgprobe[:LAYOUTS[:SHAPE]]  autotune the split TF32 wgmma family alone (scripts/issue31/
#                wgmma_probe.toml) on SHAPE (default 4096x4096x4096) in each layout (default all
#                four), every trial printed: correctness, accuracy and speed beside cuBLAS
#   tests:FILTER the GPU tests matching the gtest filter
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?OUT must name the output folder}"
WORK=${WORK:-/tmp/issue31}
mkdir -p "$OUT" "$WORK"
[ -n "${SKIP_UNPACK:-}" ] || carry/zstd -d --long=27 -c carry/bins.tar.zst | tar -xf -
export LD_LIBRARY_PATH="$PWD/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNED_DB="$WORK/user.db"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/device.txt"

for step in "$@"; do
  name=${step%%:*}
  arg=${step#"$name"}; arg=${arg#:}
  echo "=== $step ($(date +%T))"
  case $name in
    wgprobe)
      layouts=${arg%%:*}; layouts=${layouts:-NN,NT,TN,TT}
      shape=${arg#*:}; [ "$shape" = "$arg" ] && shape=4096x4096x4096
      for layout in ${layouts//,/ }; do
        timeout 300 build/tools/autotune --device 0 --config scripts/issue31/wgmma_probe.toml \
          --layout "$layout" --shape "$shape" --budget 90 --db "$WORK/probe.db" -v \
          > "$OUT/wgprobe_${layout}_${shape}.log" 2>&1
        echo "$layout $shape rc=$?"; tail -n 25 "$OUT/wgprobe_${layout}_${shape}.log"
      done ;;
    tests)
      timeout 500 build/tests/tuned_gpu_tests --gtest_filter="$arg" > "$OUT/tests.log" 2>&1
      echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |FAILED|tests ran" "$OUT/tests.log" | tail -20 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
