#!/usr/bin/env bash
# Issue 32, part 4 ("Every GPU at work") measured on a machine with 2 GPUs, from binaries built on
# the CPU machine, in one command:
#   BIN=build scripts/multigpu_check.sh [autotune] [entropy]      (both when none is named)
# BIN is a build folder holding tools/autotune, tools/tunedb and bench/entropy (default: build);
# a libgomp.so.1 beside them is used where the machine has none. To carry only those, here:
#   mkdir -p carry/bin/tools carry/bin/bench && cp build/tools/{autotune,tunedb} carry/bin/tools &&
#   cp build/bench/entropy carry/bin/bench &&
#   cp "$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')" carry/bin
# and on the GPU machine: BIN=carry/bin scripts/multigpu_check.sh
# Logs and results go under $OUT (or ./out), at most 8 files; a short table comes last.
#   autotune  the same 8 GEMM shapes (written to $OUT/shapes.txt) with the same budget (BUDGET
#             seconds in all, default 120: 15 s a shape), once with --device 0 and once with
#             --device $DEVICES (default all), each into a fresh database: the wall times, their
#             ratio (acceptance: <= 0.6), and in each database the best rows and the shapes with
#             trials (no lost row: every shape has both).
#   entropy   bench/entropy on SIZES (default 400,2560,10240,20480): per size the best one-GPU
#             kernel and end-to-end times against 2 GPUs', their ratios (acceptance at 10240 and
#             20480: kernel <= 0.55, end to end <= 0.65) and whether the outputs are bit-identical.
# About 4-5 minutes on two H100s.
set -uo pipefail
bin=${BIN:-build}
out=${OUT:-out}
mkdir -p "$out"
budget=${BUDGET:-120}
devices=${DEVICES:-all}
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(autotune entropy)
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$bin"  # after the machine's own
# Only what the steps asked for must be there.
for step in "${steps[@]}"; do
  case "$step" in
    autotune) tools=(tools/autotune tools/tunedb) ;;
    entropy) tools=(bench/entropy) ;;
    *) tools=() ;;
  esac
  for tool in "${tools[@]}"; do
    [ -x "$bin/$tool" ] || { echo "multigpu_check: $bin/$tool is missing (BIN=build folder)"; exit 2; }
  done
done
gpus=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
echo "== $gpus GPU(s): $name; binaries from $bin; logs in $out"
[ "$gpus" -ge 2 ] || echo "multigpu_check: fewer than 2 GPUs visible: the 2-GPU figures are not measured"
work=$(mktemp -d)  # the databases: not among the files brought back
trap 'rm -rf "$work"' EXIT
table=()

# Rows of a database, through tunedb's JSON: best rows, and distinct problems (device, op,
# variant, shape) with trials, and with an ok trial.
count_rows() {
  "$bin/tools/tunedb" --db "$1" best --format json > "$work/best.json" &&
    "$bin/tools/tunedb" --db "$1" trials --format json > "$work/trials.json" || return
  if ! command -v python3 > /dev/null; then  # a rougher count without it
    echo "$(grep -c '"device_uuid"' "$work/best.json") best rows, $(grep -c '"device_uuid"' "$work/trials.json") trials"
    return
  fi
  python3 - "$work/best.json" "$work/trials.json" "$2" <<'EOF'
import json, sys
best = json.load(open(sys.argv[1]))
trials = json.load(open(sys.argv[2]))
key = lambda r: (r["device_uuid"], r["op"], r["variant"], r["shape"])
tried = {key(t) for t in trials}
ok = {key(t) for t in trials if t["disposition"] == "ok"}
shapes = {(b["op"], b["variant"], b["shape"]) for b in best}
with_trials = sum(1 for b in best if key(b) in tried)
expected = int(sys.argv[3])
whole = len(best) == len(shapes) == with_trials == len(tried) == expected
print(f"{len(best)} best rows ({len(shapes)} shapes, {len({b['device_uuid'] for b in best})} GPU(s)), "
      f"{len(tried)} problems with trials ({len(ok)} with an ok one), {len(trials)} trials; "
      f"best rows with their trials: {with_trials}; no lost row: {'yes' if whole else 'NO'} "
      f"(expected {expected})")
EOF
}

for step in "${steps[@]}"; do
  case "$step" in
    autotune)
      cat > "$out/shapes.txt" <<'EOF'
# 8 large GEMM problems, every layout: the same for the 1-GPU and the N-GPU run
NN 4096x4096x4096
NT 4096x4096x4096
TN 4096x4096x4096
TT 4096x4096x4096
NN 8192x8192x1024
NN 2048x8192x2048
TN 4096x1024x8192
NT 1024x4096x8192
EOF
      declare -A wall rows
      for run in one all; do
        device=$([ "$run" = one ] && echo 0 || echo "$devices")
        rm -f "$work/$run.db"
        start=$(date +%s.%N)
        "$bin/tools/autotune" --device "$device" --op gemm --shapes-from "$out/shapes.txt" \
          --budget "$budget" --seed 1 --db "$work/$run.db" --json "$out/autotune_$run.json" \
          > "$out/autotune_$run.txt" 2>&1
        rc=$?
        wall[$run]=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
        rows[$run]=$(count_rows "$work/$run.db" "$(grep -cv '^#' "$out/shapes.txt")" 2>&1)
        echo "== autotune --device $device: exit $rc, ${wall[$run]} s; ${rows[$run]}"
        tail -n 14 "$out/autotune_$run.txt"
      done
      ratio=$(awk -v a="${wall[all]}" -v b="${wall[one]}" 'BEGIN { printf "%.3f", b > 0 ? a / b : 9 }')
      verdict=$(awk -v r="$ratio" 'BEGIN { print (r <= 0.6 ? "pass" : "FAIL") }')
      table+=("autotune 8 shapes, budget $budget s: --device 0 ${wall[one]} s, --device $devices ${wall[all]} s, ratio $ratio ($verdict: <= 0.6)")
      table+=("  --device 0:        ${rows[one]}")
      table+=("  --device $devices: ${rows[all]}") ;;
    entropy)
      "$bin/bench/entropy" --sizes "${SIZES:-400,2560,10240,20480}" --json "$out/entropy.json" \
        > "$out/entropy.txt" 2>&1
      rc=$?
      cat "$out/entropy.txt"
      table+=("entropy bench exit $rc (2-GPU split against the best 1-GPU figures; kernel <= 0.55, end to end <= 0.65):")
      while IFS= read -r line; do table+=("  $line"); done < <(grep -E '^(split|ALL|MISMATCH)' "$out/entropy.txt")
      if command -v python3 > /dev/null && [ -s "$out/entropy.json" ]; then
        while IFS= read -r line; do table+=("  $line"); done < <(python3 - "$out/entropy.json" <<'EOF'
import json, sys
for s in json.load(open(sys.argv[1])).get("splits", []):
    if s["rows"] not in (10240, 20480):
        continue
    k, e = s["kernel_ratio"], s["end_to_end_ratio"]
    ok = k <= 0.55 and e <= 0.65 and s["bit_identical"]
    print(f"{s['rows']}^2: kernel {k:.3f} (<= 0.55), end to end {e:.3f} (<= 0.65), "
          f"bit-identical {s['bit_identical']}: {'pass' if ok else 'FAIL'}")
EOF
)
      fi ;;
    *) echo "unknown step $step (autotune, entropy)"; exit 2 ;;
  esac
done
printf '%s\n' "${table[@]}" > "$out/summary.txt"
echo
echo "== summary on $gpus x $name =="
cat "$out/summary.txt"
