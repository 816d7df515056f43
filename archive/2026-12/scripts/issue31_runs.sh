#!/usr/bin/env bash
# Issue 31's measurements on the GPU machine, from binaries carried in carry/bins.tar.zst (packed by
# scripts/pack_bins.sh): each argument one step, logs under $OUT.
#   wgprobe[:LAYOUTS[:SHAPE]]  autotune the split TF32 wgmma family alone (scripts/issue31/
#                wgmma_probe.toml) on SHAPE (default 4096x4096x4096) in each layout (default all
#                four), every trial printed: correctness, accuracy and speed beside cuBLAS
#   configs:SHAPES[/INPUTS]  bench/gemm_configs: the split TF32 wgmma seeds (MMA = 3 and the
#                TMA-fed MMA = 4) beside cuBLAS on SHAPES (LAYOUT:MxNxK, ','-separated), inputs
#                uniform (default) or wide
#   tests[:FILTER]  the GPU tests (gtest filter, default the GEMM families)
#   sanitize[:TOOLS]  GemmUnderSanitizer (every GEMM family, one small odd problem per layout)
#                under compute-sanitizer's TOOLS (default racecheck,synccheck)
#   tf32x3:SECONDS  bench/results/gemm_tf32x3_<device>.json: the TMA-fed split TF32 seed beside
#                cuBLAS on 4096^3, 8192^3 and 16384x16384x4096 in every layout (uniform and wide
#                inputs) and the gemm_networks shapes of 100 GFLOP or more (uniform; those of
#                k of 100000 or more also with 16 splits)
#   tune:VARIANTS[:SECONDS[:SHAPES]]  autotune each variant (e.g. NN,NN-tf32: a layout, or one with
#                a compute type) on SHAPES (default 4096x4096x4096,8192x8192x8192) for SECONDS each
#                (default 30), beside cuBLAS (in TF32 for the TF32 type); bests in $OUT/tune.db
#   tuned-configs  bench/gemm_configs on each best the tune steps recorded ($OUT/tune.db), on its
#                own shape and layout, inputs uniform and wide: $OUT/tf32x3_tuned.json
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
      shapes=${arg%%/*}; inputs=${arg#*/}; [ "$inputs" = "$arg" ] && inputs=uniform
      C=GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8
      C=$C,PIPE=2,SWZ=0,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=3,CSTAGE=0,KSUM=1,GCOLS=1
      T=${C/PIPE=2,SWZ=0/PIPE=4,SWZ=8}; T=${T/MMA=3/MMA=4}
      args=(); for s in ${shapes//,/ }; do args+=(--shape "$s"); done
      timeout 300 build/bench/gemm_configs "${args[@]}" --config "$C" --config "$T" \
        --inputs "$inputs" 2>&1 | tee -a "$OUT/gemm_configs_$inputs.log" | cut -c1-110 ;;
    sanitize)
      tools=${arg:-racecheck,synccheck}
      for tool in ${tools//,/ }; do
        timeout 540 compute-sanitizer --tool "$tool" --error-exitcode 9 \
          build/tests/tuned_gpu_tests --gtest_filter='GemmUnderSanitizer.*' \
          > "$OUT/sanitize_$tool.log" 2>&1
        echo "$tool rc=$?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|^\[  (PASSED|FAILED)" \
          "$OUT/sanitize_$tool.log" | tail -4
      done ;;
    tf32x3)
      T=GEMV=0,BM=128,BN=128,BK=32,WM=16,WN=128,TM=2,TN=2,LM=8,VEC=4,PAD=0,AKM=1,BKM=0,UNROLL=8
      T=$T,PIPE=4,SWZ=8,MINB=1,PRETB=0,SPLITK=1,PACK=0,REDUCE=0,TAIL=0,MMA=4,CSTAGE=0,KSUM=1,GCOLS=1
      main=(); for l in NN NT TN TT; do
        for s in 4096x4096x4096 8192x8192x8192 16384x16384x4096; do main+=(--shape "$l:$s"); done
      done
      net=(); for s in $(awk '$NF + 0 >= 100 {print $(NF-2) ":" $(NF-1)}' carry/network_shapes.txt \
        | sort -u); do net+=(--shape "$s"); done
      timeout 280 build/bench/gemm_configs "${main[@]}" --config "$T" --inputs both \
        --json "$OUT/tf32x3_main.json" > "$OUT/tf32x3_main.log" 2>&1; echo "main rc=$?"
      timeout 280 build/bench/gemm_configs "${net[@]}" --config "$T" --inputs uniform \
        --json "$OUT/tf32x3_networks.json" > "$OUT/tf32x3_networks.log" 2>&1
      echo "networks rc=$?"
      # k past 128 chains of 32 slices in one split (rule float_sums_within_contract): 16 splits.
      long=(); for s in $(awk '$NF + 0 >= 100 && split($(NF-1), d, "x") && d[3] >= 100000 {print $(NF-2) ":" $(NF-1)}' \
        carry/network_shapes.txt | sort -u); do long+=(--shape "$s"); done
      timeout 120 build/bench/gemm_configs "${long[@]}" \
        --config "${T/SPLITK=1,PACK=0,REDUCE=0/SPLITK=16,PACK=0,REDUCE=1}" --inputs uniform \
        --json "$OUT/tf32x3_networks_split.json" > "$OUT/tf32x3_networks_split.log" 2>&1
      echo "networks split rc=$?"; cut -c1-100 "$OUT/tf32x3_main.log" | head -30 ;;
    tune)
      IFS=: read -r variants seconds shapes <<< "$arg"
      for variant in ${variants//,/ }; do
        for shape in ${shapes:-4096x4096x4096,8192x8192x8192}; do
          for s in ${shape//,/ }; do
            timeout 300 build/tools/autotune --device 0 --op gemm --layout "$variant" --shape "$s" \
              --budget "${seconds:-30}" --db "$WORK/tune.db" > "$OUT/tune_${variant}_$s.log" 2>&1
            echo "$variant $s rc=$?"; tail -n 4 "$OUT/tune_${variant}_$s.log"
          done
        done
      done
      cp "$WORK/tune.db" "$OUT/tune.db" ;;
    tuned-configs)
      build/tools/tunedb --db "$WORK/tune.db" --format csv best > "$OUT/tune_bests.csv"
      python3 - "$OUT/tune_bests.csv" > "$WORK/tuned_configs.txt" <<'PY'
import csv, sys
for row in csv.DictReader(open(sys.argv[1])):
    if row["op"] == "gemm" and "-" not in row["variant"]:  # the default compute type's
        print(row["variant"], row["shape"], row["config"])
PY
      i=0
      while read -r layout shape config; do
        i=$((i + 1))
        timeout 120 build/bench/gemm_configs --shape "$layout:$shape" --config "$config" \
          --inputs both --json "$WORK/tuned_$i.json" >> "$OUT/tf32x3_tuned.log" 2>&1
        echo "$layout $shape rc=$?"
      done < "$WORK/tuned_configs.txt"
      python3 - "$OUT/tf32x3_tuned.json" "$WORK"/tuned_*.json <<'PY'
import json, sys
rows, device = [], None
for path in sys.argv[2:]:
    d = json.load(open(path))
    device = d.get("device", device)
    rows += d["rows"]
json.dump({"device": device, "rows": rows}, open(sys.argv[1], "w"), indent=1)
for r in rows:
    print(r["layout"], r["shape"], r["inputs"], round(r["ratio"], 3), r["tuned_tflops"],
          "err", r["err_tuned"], r["err_cublas"])
PY
      ;;
    tests)
      timeout 540 build/tests/tuned_gpu_tests --gtest_filter="${arg:-GemmFamilies.*}" \
        > "$OUT/tests.log" 2>&1
      echo "tests rc=$?"; grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[ +(OK|FAILED) " "$OUT/tests.log" \
        | tail -30 ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
