#!/usr/bin/env bash
# Regenerates the shipped selection-model tables from the committed sweeps:
#   scripts/refit_selection.sh [SWEEP_TSV_GZ...]   (default: every bench/data/sweeps/gemm_sweep_*.tsv.gz)
# The sweeps bench/data/sweeps/<op>_sweep_<gpu>*.tsv.gz of one GPU model (a first sweep and later
# additions, e.g. gemm_sweep_nvidia-h100_families.tsv.gz) become one table,
# cache/shipped/<op>_selection_<tag>.tsv, the
# GPU model and compute capability taken from the sweep's first line, the tag made from the model
# name as scripts/gemm_bench.sh makes it ("NVIDIA H100 80GB HBM3" -> nvidia-h100). Rebuild
# afterwards: the tables are built into libtuned and their kernels precompiled.
#
# A sweep is measured on the GPU (about an hour on an H100; rows are flushed per problem):
#   build/bench/gemm_sweep --seeds 1-40 --grid --out gemm_sweep_<tag>.tsv
#   gzip gemm_sweep_<tag>.tsv && mv gemm_sweep_<tag>.tsv.gz bench/data/sweeps/
# Denser data where picks miss most (minutes; F: configs from autotune runs on family shapes):
#   build/bench/gemm_sweep --seeds 1000-1099 --hard-families [--candidates F] --out FILE
# Variants of the portfolio's entries with a parameter it lacks (a file of configs, one per line;
# how gemm_sweep_nvidia-h100_tail-reduce was made, TAIL=1 and REDUCE=1 variants):
#   build/bench/gemm_sweep --seeds 1-40 --grid --candidates F --out FILE   (and the other seeds)
# Issue 28's sweeps (H100): the portfolio plus the candidates found by autotune on large shapes,
# on layers of public networks no benchmark uses and on large, middle and small random strata:
#   scripts/issue28_runs.sh probe sweep portfolio   (on the GPU machine; see its header)
# and the second fitting set (other token counts, decoding, convolution weight gradients):
#   scripts/issue28_runs.sh probe-more more
# (the held-out problems of bench/held_out.hpp: gemm_random's seeds 101-103 and 111-113,
# gemm_families' 201 and bench/gemm_networks' layers, are never swept; fit_selection and
# gemm_sweep drop them.)
# and the matrix-vector configs on up to 16 vectors (m or n up to 16, every column class), the
# long products (convolution-like weight gradients and first layers) and then the entries those
# brought into the table on the other sets (so they are judged near every shape):
#   scripts/issue28_runs.sh gemv long        (refit, rebuild, then:)  scripts/issue28_runs.sh fill
# The shipped tables: H100 with ENTRIES=128 (80 before the hard-family sweep, 96 before the long-sum
# sweep of issue 31, whose leave-one-out rose at 112 in every layout, 112 before the refill sweeps,
# with which 128 rose in NN, NT and TT and held in TN; the default time weight) on the first sweep, the matrix-vector one and issue 28's (gemm_sweep_nvidia-h100.tsv.gz, _gemv, _issue28-*, the last
# with the matrix-vector sweeps _issue28-gemv-*, the long set _issue28-long and _issue28-*-fill):
#   ENTRIES=96 scripts/refit_selection.sh bench/data/sweeps/gemm_sweep_nvidia-h100_issue28*.tsv.gz \
#     bench/data/sweeps/gemm_sweep_nvidia-h100_gemv.tsv.gz bench/data/sweeps/gemm_sweep_nvidia-h100.tsv.gz
# (issue 31: the _issue28-wgmma-* sweeps of the split TF32 wgmma candidates among them) and H200
# on its refresh and wgmma sweeps (ENTRIES=112 now, see below):
#   ENTRIES=112 scripts/refit_selection.sh bench/data/sweeps/gemm_sweep_nvidia-h200_issue28-*-refresh.tsv.gz \
#     bench/data/sweeps/gemm_sweep_nvidia-h200_issue28-wgmma-*.tsv.gz
# Where a later sweep measured a changed kernel again (the _issue28-rows-first-* sweeps: the wgmma
# configs of VEC = 4 after their loads changed; then _issue28-lanes-*: those of one consumer
# warpgroup after narrow loads changed, at MINB 1 and 2), it comes last: fit_selection keeps the
# last row of a problem and config; the hard families' sweeps (`issue28_runs.sh hard` and
# `hard-nt`: configs autotune found on skinny and tiny-k fitting shapes) after them, then the
# decoding sweep (`issue28_runs.sh decode`: the fitting models decoding 16-32 tokens), then the
# wgmma tiles at three blocks per SM and with the producer two slices ahead (`issue28_runs.sh minb3`
# and `ahead`). So the shipped H100 table is (H=bench/data/sweeps/gemm_sweep_nvidia-h100)
#   ENTRIES=128 scripts/refit_selection.sh $(ls ${H}_issue28*.tsv.gz |
#     grep -v -e rows-first -e lanes -e hard-large -e issue28-decode -e long-sums -e chains -e served \
#       -e layer-tokens -e grid-portfolio -e refill -e vocab -e ffn-grid -e tma-packed) \
#     ${H}_gemv.tsv.gz ${H}.tsv.gz ${H}_issue28-rows-first-*.tsv.gz \
#     $(ls ${H}_issue28-lanes-*.tsv.gz | grep -v ahead) \
#     ${H}_issue28-hard-large.tsv.gz ${H}_issue28-hard-large-nt.tsv.gz ${H}_issue28-decode.tsv.gz \
#     ${H}_issue28-hard-large-minb3.tsv.gz ${H}_issue28-decode-minb3.tsv.gz \
#     ${H}_issue28-hard-large-ahead.tsv.gz ${H}_issue28-decode-ahead.tsv.gz \
#     ${H}_issue28-lanes-large-ahead.tsv.gz ${H}_issue28-tma-{networks,large,more,middle}.tsv.gz \
#     ${H}_issue28-tma-splits-{more,networks,long}.tsv.gz ${H}_issue28-thin-c-long.tsv.gz \
#     ${H}_issue28-long-sums.tsv.gz ${H}_issue28-chains-{more,networks,long}.tsv.gz \
#     ${H}_issue28-served-{networks,more}.tsv.gz ${H}_issue28-layer-tokens.tsv.gz \
#     ${H}_issue28-grid-portfolio.tsv.gz ${H}_issue28-{networks,large,middle,small}-refill.tsv.gz \
#     ${H}_issue28-vocab.tsv.gz ${H}_issue28-ffn-grid.tsv.gz \
#     ${H}_issue28-{large,middle,networks,small,vocab}-tma-packed.tsv.gz
# (the TMA-fed split TF32 candidates, `issue28_runs.sh tma`, and their many-split variants on long
# sums, `tma-splits`, the staged-C FP64 tiles of 32 rows, `thin-c`, and the TMA-fed configs with
# partial chains of slice sums, packed where unaligned, on the long-sum grid and the fitting sets'
# long sums, `long-sums` and `chains`, and the TMA entries in the form served past one chain,
# `served`, the portfolio on layers of 2048-4096 tokens, `layer-tokens`, and the portfolio again
# where most of its entries were never timed, `grid-portfolio` and `refill`, on vocabulary
# projections whose vocabulary is not a multiple of 4 and on feed-forward layers, `vocab` and
# `ffn-grid`, and its unpacked TMA entries as served packed on the unaligned problems,
# `tma-packed`: issue 31)
# and the H200's the command above, with ENTRIES=112 (at 96 the hard families displaced the FP64
# 128-split entry of a 118 GFLOP convolution weight gradient), followed by its
# _issue28-rows-first-networks and -more sweeps, its _issue28-lanes-large, -middle, -networks and
# -more sweeps, its _issue28-hard-large sweep and its _issue28-decode sweep (not the layer grids: only
# wgmma configs ran there, the H200 has no sweep of the others on it), then as on the H100 its
# _issue28-hard-large-minb3, -decode-minb3, -hard-large-ahead, -decode-ahead and
# -lanes-large-ahead sweeps (the table's header lists the files in order), and last its TMA-fed
# sweeps (`issue28_runs.sh tma-refresh`, ENTRIES=112): the files above, then
#   ${H2}_issue28-{networks,more,large,long,middle,large-b,large-c,middle-b,small-b,vocab,layer-grid,
#     layer-tokens,ffn-grid,long-sums}-tma-refresh.tsv.gz   (H2=bench/data/sweeps/gemm_sweep_nvidia-h200)
# (at 80 the H200 refit dropped the FP64 split-K entry of a 118 GFLOP convolution weight gradient).
# The other H100 sweeps measured single FFMA chains only where the accuracy contract now refuses
# them (most rows past k = 128) and no FP64 tensor-core or KSUM config beside them, so their
# problems would speak for what the library can no longer run; the H200's sweeps from before issue
# 28 likewise.
#
# Batches (issue 65): after the refit, the portfolio's times on attention's batched products
# (gemm_sweep --attention --portfolio, scripts/issue65_gpu.sh's sweep step) are appended to the
# table as points where the library looks a batch up (the batch folded into the longer side, and
# the batch as a fourth dim); the portfolio and every other point stay as the refit wrote them.
# The second sweep also timed TMA-fed tiles with a head dimension on one side (--candidates
# bench/data/sweep_candidates/gemm_sweep_candidates_attention_heads.txt), up to 4 of which per
# layout become entries (--add-entries):
#   zcat ${H}_attention.tsv.gz | build-fit/bench/fit_selection - --input-name ${H}_attention.tsv.gz \
#     --append-to cache/shipped/gemm_selection_nvidia-h100.tsv --out cache/shipped/gemm_selection_nvidia-h100.tsv
#   zcat ${H}_attention-heads.tsv.gz | build-fit/bench/fit_selection - \
#     --input-name ${H}_attention-heads.tsv.gz --add-entries 4 \
#     --append-to cache/shipped/gemm_selection_nvidia-h100.tsv --out cache/shipped/gemm_selection_nvidia-h100.tsv
# (the shipped H100 table; its first sweep is the first --attention grid, batch x heads 12-192 and
# operands up to 2^29 floats, whose kernels were those valid on a 1024^3 batch; the second the
# grid of batch x heads 24-384 with the outputs turned over. The H200 has none yet.)
#
# fit_selection is built in build-fit/ (no precompiled kernels, no tests): BUILD_DIR overrides.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build-fit}
entries=${ENTRIES:-40}
neighbours=${NEIGHBOURS:-5}
# Weights of the op's analytic features (OpFace::selection_features): chosen by leave-one-out on
# the H100 sweeps (picks below 0.6x cuBLAS 226 -> 122 of 10944, geomean 1.186 -> 1.202); the
# table header prints fit_selection's own leave-one-out figures, so a change can be compared.
feature_weights=${FEATURE_WEIGHTS-padding=0.75,waves=0.5}
# Each problem weighs 1 + its cuBLAS ms / this in the portfolio's objective (0: counted alike).
time_weight_ms=${TIME_WEIGHT_MS:-0.05}

sweeps=("$@")
if [ ${#sweeps[@]} -eq 0 ]; then
  shopt -s nullglob
  sweeps=(bench/data/sweeps/gemm_sweep_*.tsv.gz)
fi
if [ ${#sweeps[@]} -eq 0 ]; then
  echo "refit_selection: no sweep given and none in bench/data/sweeps/" >&2
  exit 2
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTUNED_PRECOMPILE=OFF \
    -DTUNED_BUILD_TESTS=OFF -DTUNED_BUILD_BENCH=OFF > /dev/null
fi
cmake --build "$build" --target fit_selection -j"$(nproc)" > /dev/null

# Sweeps of one GPU model (several runs of bench/gemm_sweep) are fitted together into its table.
declare -A inputs names
order=()
for sweep in "${sweeps[@]}"; do
  first=$(zcat -f "$sweep" | head -n 1 || true)  # zcat ends on SIGPIPE
  # "# gemm_sweep on NVIDIA H100 80GB HBM3 (sm_90, 132 SMs)"
  name=$(sed -n 's/^# [^ ]* on \(.*\) (.*$/\1/p' <<< "$first")
  if [ -z "$name" ]; then
    echo "refit_selection: $sweep: first line names no GPU: $first" >&2
    exit 1
  fi
  tag=$(echo "$name" | tr 'A-Z' 'a-z' |
    awk '{for (i = 2; i <= NF; i++) if ($i ~ /[0-9]/) {print $1 "-" $i; exit}}')
  base=$(basename "$sweep")
  out=cache/shipped/${base%%_sweep_*}_selection_${tag}.tsv
  [ -z "${inputs[$out]:-}" ] && order+=("$out")
  inputs[$out]="${inputs[$out]:-} $sweep"
  names[$out]=$name
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# fit_selection's recursion at 1.5M rows outgrows an 8 MB stack (it crashed with the TMA sweeps).
ulimit -s unlimited 2>/dev/null || ulimit -s 1048576 2>/dev/null || true
for out in "${order[@]}"; do
  base=$(basename "$out")
  op=${base%%_selection_*}
  read -r -a files <<< "${inputs[$out]}"
  echo "== ${files[*]} (${names[$out]}) -> $out"
  plain=()
  for f in "${files[@]}"; do  # fit_selection reads plain files, each with its own header
    plain+=("$(basename "$f" .gz)")
    zcat -f "$f" > "$tmp/${plain[-1]}"
  done
  # Run from the folder of the unpacked sweeps so the table's header names them, not $tmp.
  (cd "$tmp" && "$OLDPWD/$build/bench/fit_selection" "${plain[@]}" --op "$op" \
    --entries "$entries" --neighbours "$neighbours" --time-weight-ms "$time_weight_ms" \
    ${feature_weights:+--feature-weights "$feature_weights"} --out "$OLDPWD/$out")
done
