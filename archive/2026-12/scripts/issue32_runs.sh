#!/usr/bin/env bash
# Issue 32's measurements on a GPU machine of one or more GPUs, from a build folder $BIN (default
# build: bench/record_space, bench/gemm_picks, bench/gemm_networks, tools/autotune): each argument
# one step; logs and results under $OUT. Jobs are spread over the GPUs, one at a time per GPU, each
# pinned to its share of the cores (a tuner's compile threads follow its affinity,
# tuner/compile_pool.hpp), so a job sees what a one-GPU machine of that share would.
#   record[:S]   bench/record_space on the replay problems below (8 GEMM problems near the
#                networks' layers, one transpose, one entropy): every config of each space (or of
#                what a search meets there) measured once, at most S seconds a problem (default
#                360): $OUT/replay.tar of <op>_<variant>_<shape>_<gpu>.tsv.gz; $RECORD_OPS (default
#                "transpose entropy gemm") names the ops to record
#   tune-quality[:S]  autotune on the eight large layers (or those of $LAYERS, indices 0-7): S
#                seconds (default 300), then 10 s and 3 s, each from an empty database:
#                $OUT/tune_<budget>_<layout>_<shape>.json ($BUDGETS, e.g. "10 3", names others)
#   first-use    gemm_networks --first-use on the four models of those layers, on GPU $FIRST_USE_GPU
#                (default 0; every layer's first call tunes within its bound): $OUT/first_use.json
#   picks[:S]    per layer, gemm_picks times the S s, 10 s and 3 s runs' bests (their databases,
#                kept in $DBDIR, default /tmp, by tune-quality in the same lease) and first-use
#                tuning's pick side by side with cuBLAS in one process: $OUT/picks_<layout>_<shape>.json
#   saved-picks:FILE  as picks, with one saved run's bests as the reference: FILE is a portable file
#                of them (tunedb export --portable; bench/data/tuning_speed_bests_<gpu>.portable
#                holds 300 s bests), imported into a fresh database, which serves them on any twin
#                GPU; first-use tuning's pick (and tune-quality's 10 s and 3 s bests, where this
#                lease made them) beside them, for the layers FILE has a best of:
#                $OUT/picks_<layout>_<shape>.json, as picks writes (no 300 s run needed)
#   summary[:S]  each layer's 3 s, 10 s and first-use result as a fraction of its S s best, and
#                their medians (from the files above, of this run or earlier ones in $OUT)
set -uo pipefail
BIN=${BIN:-build}
OUT=${OUT:-out}
mkdir -p "$OUT"
# (summary needs no GPU: it reads the files of earlier steps)
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$gpus" -ge 1 ] || gpus=1
cores=$(nproc)
share=$((cores / gpus))
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | tr 'A-Z ' 'a-z-' |
  sed 's/nvidia-//; s/-80gb-hbm3//; s/-141gb-hbm3e//; s/-nvl//')
echo "issue32_runs: $gpus GPU(s) ($gpu_name), $cores cores, $share per job"

# Runs the commands in the file $1 (one per line) over the GPUs: job i on GPU i mod gpus, jobs of
# one GPU in turn, each pinned to that GPU's cores.
spread() {
  local list=$1 g
  for ((g = 0; g < gpus; g++)); do
    (
      n=0
      while IFS= read -r cmd; do
        if ((n % gpus == g)); then
          CUDA_VISIBLE_DEVICES=$g taskset -c $((g * share))-$((g * share + share - 1)) \
            bash -c "$cmd"
        fi
        n=$((n + 1))
      done <"$list"
    ) &
  done
  wait
}

# gemm_picks runs spread over the GPUs, then their tables (without the headers).
spread_picks() {
  spread "$1"
  cat "$OUT"/picks_*.log | grep -v "^gemm_picks on\|^problem\|^ALL"
}

# The replay problems: large and small, all layouts, none held out (bench/held_out.hpp: the
# acceptance benchmarks' shapes, which no test may use): near the networks' layers, not on them.
# The two smallest first: on 8 GPUs they share theirs with the transpose and entropy jobs.
REPLAY_GEMM=(
  "TT 777x1000x555" "TN 1000x600x1200" "TN 4096x2048x12288" "TN 6144x8192x1536"
  "NT 4096x1536x6144" "NN 1536x8192x2560" "NN 1536x768x3584" "NT 1536x1536x2560")
# The eight large layers of issue 32's second acceptance (bench/gemm_networks).
LARGE=(
  "TN 4096x2048x14336" "TN 5120x2048x13824" "TN 5120x8192x1280" "NT 4096x1024x8192"
  "NT 14336x4096x512" "NN 1024x8192x3072" "NN 5120x2048x1280" "TN 50257x512x1024")

for step in "$@"; do
  name=${step%%:*}
  arg=${step#*:}
  [ "$arg" = "$step" ] && arg=""
  case $name in
    record)
      # A job past its budget by a minute (a kernel that never returns) is killed; its file holds
      # what it measured up to its last 50 trials.
      budget=${arg:-360}
      mkdir -p "$OUT/replay" "$OUT/record-logs"
      list=$(mktemp)
      job() {  # op variant shape
        local name="$1${2:+_$2}_$3"
        echo "timeout $((budget + 60)) $BIN/bench/record_space --op $1 ${2:+--layout $2} --shape $3 \
          --budget $budget --out $OUT/replay/${name}_$gpu_name.tsv.gz \
          >>$OUT/record-logs/record.log 2>$OUT/record-logs/$name.err"
      }
      ops=" ${RECORD_OPS:-transpose entropy gemm} "
      [[ $ops == *" transpose "* ]] && job transpose "" 4096x4096 >>"$list"
      [[ $ops == *" entropy "* ]] && job entropy "" 2560x2560x2x16 >>"$list"
      if [[ $ops == *" gemm "* ]]; then
        for p in "${REPLAY_GEMM[@]}"; do
          set -- $p
          job gemm "$1" "$2" >>"$list"
        done
      fi
      spread "$list"
      cat "$OUT/record-logs/record.log"
      ls -la "$OUT/replay"
      # Few files come back from the machine: one archive of the records, one of the logs.
      tar -C "$OUT" -cf "$OUT/replay.tar" replay && rm -r "$OUT/replay"
      tar -C "$OUT" -czf "$OUT/record-logs.tar.gz" record-logs && rm -r "$OUT/record-logs"
      ;;
    tune-quality)
      list=$(mktemp)
      for i in ${LAYERS:-0 1 2 3 4 5 6 7}; do
        set -- ${LARGE[$i]}
        cmds=""
        for budget in ${BUDGETS:-${arg:-300} 10 3}; do
          db="${DBDIR:-/tmp}/tq_${1}_${2}_$budget.db"
          cmds+="rm -f $db*; $BIN/tools/autotune --op gemm --layout $1 --shape $2 --budget $budget \
            --seed 1 --db $db --json $OUT/tune_${budget}_$1_$2.json >$OUT/tune_${budget}_$1_$2.log 2>&1; "
        done
        echo "$cmds"
      done >"$list"
      spread "$list"
      tail -n 4 "$OUT"/tune_*.log
      ;;
    first-use)
      CUDA_VISIBLE_DEVICES=${FIRST_USE_GPU:-0} "$BIN/bench/gemm_networks" --first-use --json "$OUT/first_use.json" \
        --model Mistral-7B --model Llama-2-13B --model "GPT-2 large" --model "GPT-2 medium" \
        >"$OUT/first_use.log" 2>&1
      tail -n 8 "$OUT/first_use.log"
      ;;
    picks)
      list=$(mktemp)
      for i in ${LAYERS:-0 1 2 3 4 5 6 7}; do
        set -- ${LARGE[$i]}
        db="${DBDIR:-/tmp}/tq_${1}_${2}"
        echo "$BIN/bench/gemm_picks --pick ${arg:-300}s=${db}_${arg:-300}.db --pick 10s=${db}_10.db \
          --pick 3s=${db}_3.db --first-use --shape $1:$2 --json $OUT/picks_$1_$2.json \
          >$OUT/picks_$1_$2.log 2>&1"
      done >"$list"
      spread_picks "$list"
      ;;
    saved-picks)
      db="${DBDIR:-/tmp}/saved_bests.db"
      rm -f "$db"*
      "$BIN/tools/tunedb" import "$arg" --db "$db" || exit 1
      list=$(mktemp)
      for i in ${LAYERS:-0 1 2 3 4 5 6 7}; do
        set -- ${LARGE[$i]}
        grep -q "shape = '$2'" "$arg" || continue
        runs=""  # the 10 s and 3 s runs' bests too, where tune-quality made them in this lease
        for budget in 10 3; do
          tq="${DBDIR:-/tmp}/tq_${1}_${2}_$budget.db"
          [ -e "$tq" ] && runs+=" --pick ${budget}s=$tq"
        done
        echo "$BIN/bench/gemm_picks --pick saved=$db$runs --first-use --shape $1:$2 \
          --json $OUT/picks_$1_$2.json >$OUT/picks_$1_$2.log 2>&1"
      done >"$list"
      spread_picks "$list"
      ;;
    summary)
      # Fractions of ratios to cuBLAS, each timed side by side with cuBLAS in its own run: clocks
      # and temperature of one run do not bias the comparison with another.
      python3 - "$OUT" "${arg:-300}" <<'PY'
import json, sys, glob, statistics
out, long_budget = sys.argv[1], sys.argv[2]
rows = {}
for f in glob.glob(f"{out}/tune_*.json"):
    budget = f.split("/")[-1].split("_")[1]
    for r in json.load(open(f))["rows"]:
        rows.setdefault((r["layout"], r["shape"]), {})[budget] = (r["ratio"], r["ms"], "")
try:
    for r in json.load(open(f"{out}/first_use.json"))["rows"]:
        key = (r["layout"], r["shape"])
        if key in rows:
            rows[key]["first-use"] = (r["ratio"], r["tuned_ms"], f"{r['first_use_ms']:.0f} ms call")
except FileNotFoundError:
    pass
print(f"{'layer':24} {'run':>9} {'ms':>9} {'vs cuBLAS':>9} {'of best':>7}")
fr = {b: [] for b in ("3", "10", "first-use")}
for key, by in sorted(rows.items()):
    best = by.get(long_budget)
    for b in (long_budget, "10", "3", "first-use"):
        if b not in by: continue
        ratio, ms, note = by[b]
        f = ratio / best[0] if best else 0
        if b in fr and best: fr[b].append(f)
        print(f"{key[0]+' '+key[1]:24} {b:>9} {ms:9.4f} {ratio:9.3f} {f:7.3f} {note}")
for b, v in fr.items():
    if v: print(f"median fraction of the {long_budget} s best, {b}: {statistics.median(v):.3f} over {len(v)} layers")
# gemm_picks' figures: every pick timed in one process beside the reference (the S s run's best).
side = {}
for f in glob.glob(f"{out}/picks_*.json"):
    for r in json.load(open(f))["rows"]:
        side.setdefault(r["pick"], []).append(r["of_reference"])
        if r["first_call_ms"] is not None:
            side.setdefault("first-use call ms", []).append(r["first_call_ms"])
for pick, v in side.items():
    what = "median" if pick.endswith("ms") else f"median fraction of the {long_budget} s best"
    print(f"side by side, {pick}: {what} {statistics.median(v):.3f}, worst {min(v) if not pick.endswith('ms') else max(v):.3f} over {len(v)} layers")
PY
      ;;
    *)
      echo "issue32_runs: unknown step $step" >&2
      exit 2
      ;;
  esac
done
