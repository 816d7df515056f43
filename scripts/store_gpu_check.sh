#!/usr/bin/env bash
# The tuning store and queue on one GPU machine: a PostgreSQL store started there (carry/pg.tar.xz, made by
# scripts/carry_postgres.sh: the GPU machines have no server), the benchmark suite's NN shapes but
# the largest (16 problems) enqueued, two workers tuning them from the one queue (two processes on
# one GPU: the device lock hands the GPU to one at a time, a task at a time), the bests pulled into
# an empty database, and a fresh process served from it (gemm_vs_cublas --db) beside a local run
# of the same problems with the same budget (autotune, then gemm_vs_cublas on its database).
#   carry/tools.tar.xz: bin/{autotune,tunedb,gemm_vs_cublas} and lib/libtuned.so* of one build
#   BUDGET: seconds per problem (default 6); GTEST: a gtest filter of the carried GPU tests to run
#   after (tools.tar.xz's bin/tuned_gpu_tests), GTEST_LIMIT their seconds (default 240)
# Logs under $OUT; a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lease.sh
budget=${BUDGET:-6}
root=/tmp/issue66
rm -rf "$root" && mkdir -p "$root/pg" "$root/tools"
chmod 755 "$root"
# (xz through Python's tarfile: the GPU machines have no zstd program)
unpack() { python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$@"; }
unpack carry/pg.tar.xz "$root/pg"
unpack carry/tools.tar.xz "$root/tools"
chmod -R a+rX "$root"
# The carried libraries this machine has already stay out of the path: its own are newer.
mkdir -p "$root/pg/own"
for lib in "$root"/pg/libs/*; do
  name=$(basename "$lib")
  if ldconfig -p | grep -q "/$name\$" && [ "$name" != libpq.so.5 ]; then mv "$lib" "$root/pg/own/"; fi
done
summary+=("carried libraries used: $(ls "$root/pg/libs" | tr '\n' ' ')")
export PG_BIN=$(ls -d "$root"/pg/usr/lib/postgresql/*/bin)
export LD_LIBRARY_PATH="$root/tools/lib:$root/pg/libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TUNED_LIBPQ="$root/pg/libs/libpq.so.5"
export PATH="$root/tools/bin:$PATH"
url=$(scripts/pg_test_cluster.sh start "$root/store" 2>"$out/store.log")
if [ -z "$url" ]; then
  cat "$out/store.log" "$root/store/server.log" 2>/dev/null | tail -20
  summary+=("store did not start")
  print_summary
  exit 1
fi
summary+=("store: $url")

shapes=$root/shapes.txt
gemm_vs_cublas --print-shapes NN | tr ',' '\n' | grep -v '^8192x8192x8192$' | sed 's/^/gemm NN /' \
  >"$shapes"
count=$(wc -l <"$shapes")
total=$((budget * count))
autotune --enqueue --store "$url" --shapes-from "$shapes" --budget "$total" --seed 5 \
  >"$out/enqueue.log" 2>&1
summary+=("enqueue: $(tail -n 1 "$out/enqueue.log")")

start=$EPOCHREALTIME
for w in 1 2; do
  TUNED_DB=$root/worker$w.db autotune --worker --store "$url" --device 0 --node "worker$w" \
    --lease 30 >"$out/worker$w.log" 2>&1 &
done
wait
took=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.0f", e - s }')
summary+=("two workers: $(grep -c ': done' "$out/worker1.log") + $(grep -c ': done' "$out/worker2.log") tasks done in ${took} s")
autotune --status --store "$url" >"$out/status.log" 2>&1
summary+=("status: $(head -n 1 "$out/status.log")")

tunedb pull --store "$url" --db "$root/pulled.db" >"$out/pull.log" 2>&1
summary+=("pull: $(tr '\n' ' ' <"$out/pull.log" | head -c 300)")
gemm_vs_cublas --db "$root/pulled.db" --layout NN --json "$out/served_from_store.json" \
  >"$out/served_from_store.log" 2>&1
summary+=("served from the store's bests: $(grep 'geometric mean' "$out/served_from_store.log")")

# The same problems tuned locally, one process, the same budget.
autotune --shapes-from "$shapes" --budget "$total" --seed 5 --db "$root/local.db" \
  >"$out/local_autotune.log" 2>&1
gemm_vs_cublas --db "$root/local.db" --layout NN --json "$out/served_from_local.json" \
  >"$out/served_from_local.log" 2>&1
summary+=("served from a local run's bests: $(grep 'geometric mean' "$out/served_from_local.log")")
scripts/pg_test_cluster.sh stop "$root/store"
# Side by side: each problem's ratio (cuBLAS / tuned) served from the store's bests and from the
# local run's, and the time-weighted ratios (sum of cuBLAS times / sum of tuned times).
python3 - "$out/served_from_store.json" "$out/served_from_local.json" "$shapes" <<'PY' | tee "$out/side_by_side.txt"
import json, sys
store, local = (json.load(open(p))["rows"] for p in sys.argv[1:3])
tuned = {line.split()[2] for line in open(sys.argv[3])}
local = {r["shape"]: r for r in local}
print(f"{'shape':18} {'store':>7} {'local':>7}  config served (store)")
sums = [0.0, 0.0, 0.0, 0.0]
for r in store:
    if r["shape"] not in tuned:
        continue
    l = local[r["shape"]]
    sums[0] += r["cublas_ms"]; sums[1] += r["tuned_ms"]; sums[2] += l["cublas_ms"]; sums[3] += l["tuned_ms"]
    print(f"{r['shape']:18} {r['ratio']:7.3f} {l['ratio']:7.3f}  {r['config'][:60]}")
print(f"time-weighted over {len(tuned)} problems: store {sums[0] / sums[1]:.3f}, local {sums[2] / sums[3]:.3f}")
PY
summary+=("$(tail -n 1 "$out/side_by_side.txt")")
# GTEST (a gtest filter): the carried GPU tests of the same build, where tools.tar.xz holds
# bin/tuned_gpu_tests (its tools found at ../tools/ as in a build folder).
if [ -n "${GTEST:-}" ] && [ -x "$root/tools/bin/tuned_gpu_tests" ]; then
  mkdir -p "$root/tree/tests" "$root/tree/tools"
  cp "$root/tools/bin/tuned_gpu_tests" "$root/tree/tests/"
  for tool in autotune tunedb; do ln -sf "$root/tools/bin/$tool" "$root/tree/tools/$tool"; done
  timeout "${GTEST_LIMIT:-240}" "$root/tree/tests/tuned_gpu_tests" --gtest_filter="$GTEST" \
    >"$out/gtest.log" 2>&1
  rc=$?
  summary+=("gtest '$GTEST' rc=$rc: $(grep -c '^\[       OK \]' "$out/gtest.log") passed, $(grep -c '^\[  FAILED  \] [A-Za-z]*\.' "$out/gtest.log") failed lines")
fi
print_summary
