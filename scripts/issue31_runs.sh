#!/usr/bin/env bash
# Issue 31's measurements on the GPU machine, from binaries carried in carry/bins.tar.zst (packed by
# scripts/pack_bins.sh): each argument one step, logs under $OUT.
#   wgprobe[:LAYOUTS[:SHAPE]]  autotune the split TF32 wgmma family alone (scripts/issue31/
#                wgmma_probe.toml) on SHAPE (default 4096x4096x4096) in each layout (default all
#                four), every trial printed: correctness, accuracy and speed beside cuBLAS
#   configs:SHAPES  bench/gemm_configs: the split TF32 wgmma seeds beside cuBLAS on SHAPES
#                (LAYOUT:MxNxK, ','-separated)
# (The GPU tests, also on a template with a planted bug: scripts/issue28_runs.sh tests:F broken:F.)
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?OUT must name the output folder}"
WORK=${WORK:-/tmp/issue31}
mkdir -p "$OUT" "$WORK"
[ -n "${SKIP_UNPACK:-}" ] || carry/zstd -d --long=30 -c carry/bins.tar.zst | tar -xf -
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
    configs)
      C=GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8
      C=$C,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,KSUM=1,GCOLS=1
      args=(); for s in ${arg//,/ }; do args+=(--shape "$s"); done
      timeout 120 build/bench/gemm_configs "${args[@]}" --config "$C" --config "${C/PIPE=2/PIPE=3}" \
        2>&1 | tee "$OUT/gemm_configs.log" | cut -c1-110 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
