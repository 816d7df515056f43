#!/usr/bin/env bash
# Issue 28's measurements on the GPU machine, from binaries carried in carry/bins.tar.zst (build/
# outputs, packed by scripts/pack_bins.sh): each argument one step, logs and results under $OUT;
# what later steps of the same machine need stays in $WORK (default /tmp/issue28).
#   accuracy     the accuracy contract's GPU tests; stops the script when they fail
#   probe        autotune the suite's shapes (their shipped entries) and a few layer-like shapes of
#                every layout, full space, into $WORK/tune.db: the fastest configs of each become
#                sweep candidates
#   sweep[:S]    gemm_sweep of the portfolio plus the issue's candidates (bench/data/sweep_candidates/
#                gemm_sweep_candidates_issue28_<gpu>.txt: the probe's bests and variants; with the
#                probe's database on this machine, its top 4 per problem too) on SETS below: the
#                layers of public networks no benchmark uses, then the large random stratum (seeds
#                3001-3032, >= 1 GFLOP), a middle (3101-3116, >= 0.1) and a small one (3201-3208,
#                >= 0.01); resumes where the last call stopped (rows brought back are carried in
#                carry/sweeps/ under the names they come back with), for at most S seconds
#                (default 500). Output: gemm_sweep_<gpu>_issue28-<set>.tsv.gz
#   portfolio[:S]  the shipped portfolio alone on the same problems, for at most S seconds
#                (default 540; gemm_sweep_<gpu>_issue28-<set>-portfolio.tsv.gz)
#   probe-more   autotune three convolution weight gradients of the second fitting set (k of
#                100352 to 1605632), full space, into $WORK/tune.db
#   more[:S]     the second fitting set (gemm_sweep --more-networks, at most 200 GFLOP a problem):
#                the portfolio, both candidate files (bench/data/sweep_candidates/
#                gemm_sweep_candidates_issue28*_<gpu>.txt) and the probes' top 4 per problem, for
#                at most S seconds (default 420; gemm_sweep_<gpu>_issue28-more.tsv.gz)
#   ksum[:S]     the table's FFMA entries beside their KSUM=1 variants (partial chains of k,
#                bench/data/sweep_candidates/gemm_sweep_candidates_ksum_<gpu>.txt) on the middle
#                stratum's first seeds, for at most S seconds (default 240;
#                gemm_sweep_<gpu>_issue28-ksum.tsv.gz)
#   ksum-fit[:S] the KSUM=1 variants alone on the rest of the middle stratum, the small one, the
#                networks set, the large stratum and the second fitting set (not yet swept: its
#                decoding shapes lost most to the longest-sum rule), for at most S seconds (default 300; gemm_sweep_<gpu>_issue28-
#                ksum-<set>.tsv.gz): rows for the fit where single FFMA chains break the contract
#   tf32[:S]     the split TF32 (MMA=2) variants of the table's FP64 tensor-core entries
#                (bench/data/sweep_candidates/gemm_sweep_candidates_tf32_<gpu>.txt) on the networks
#                set, the second fitting set and the large and middle strata, for at most S seconds
#                (default 500; gemm_sweep_<gpu>_issue28-tf32-<set>.tsv.gz)
#   wgmma[:S]    the split TF32 wgmma configs (MMA=3, issue 31: bench/data/sweep_candidates/
#                gemm_sweep_candidates_wgmma.txt) on the networks set, the large stratum, the second
#                fitting set and the middle stratum, for at most S seconds (default 300;
#                gemm_sweep_<gpu>_issue28-wgmma-<set>.tsv.gz)
#   tma[:S]      the split TF32 wgmma configs fed by the TMA (MMA=4, issue 31:
#                bench/data/sweep_candidates/gemm_sweep_candidates_tma.txt) on the wgmma step's
#                sets, for at most S seconds
#                (default 240; gemm_sweep_<gpu>_issue28-tma-<set>.tsv.gz)
#   tma-splits[:S]  the TMA-fed split TF32 configs with 8-32 splits summed by a second pass
#                (bench/data/sweep_candidates/gemm_sweep_candidates_tma_splits.txt) on the problems of k >= 16384
#                of the second fitting set, the networks set and the long products, for at most S
#                seconds (default 200; gemm_sweep_<gpu>_issue28-tma-splits-<set>.tsv.gz)
#   long-sums[:S]  the TMA-fed split TF32 configs with slice sums in partial chains (KSUM = 2) and
#                4-64 splits, packed where unaligned (bench/data/sweep_candidates/gemm_sweep_candidates_tma_
#                chains.txt) and the shipped portfolio on long sums under a moderate output
#                (gemm_sweep --long-sums), for at most S seconds (default 400;
#                gemm_sweep_<gpu>_issue28-long-sums.tsv.gz)
#   chains[:S]   the same configs on the long sums (k >= 16384) of the second fitting set, the
#                networks set and the long products, for at most S seconds (default 200;
#                gemm_sweep_<gpu>_issue28-chains-<set>.tsv.gz)
#   served[:S]   the table's TMA-fed entries with partial chains of slice sums (KSUM = 2: the form
#                the op serves them in past 128 slice sums, bench/data/sweep_candidates/gemm_sweep_candidates_
#                tma_served.txt) on the networks set and the second fitting set where k > 4096, for
#                at most S seconds (default 120; gemm_sweep_<gpu>_issue28-served-<set>.tsv.gz)
#   thin-c[:S]   staged-C FP64 tiles of 32 rows (bench/data/sweep_candidates/gemm_sweep_candidates_thin_c.txt)
#                on the long products, for at most S seconds (default 60;
#                gemm_sweep_<gpu>_issue28-thin-c-long.tsv.gz)
#   wgmma-waves[:S]  the split TF32 wgmma configs with 3, 6 and 12 splits and packed splits
#                (bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_waves.txt) on the wgmma step's sets,
#                for at most S seconds (default 420; gemm_sweep_<gpu>_issue28-wgmma-waves-<set>
#                .tsv.gz)
#   layer-grid[:S]  the shipped portfolio and both wgmma candidate files on the linear layers of
#                mid-size models (gemm_sweep --layer-grid: hidden sizes 768-2048, 256-1536
#                tokens, the three passes), for at most S seconds (default 420;
#                gemm_sweep_<gpu>_issue28-layer-grid.tsv.gz)
#   refill[:S]   the shipped portfolio again on the first sets (as portfolio: the entries a refit
#                brought in, timed where they were not), for at most S seconds (default 400;
#                gemm_sweep_<gpu>_issue28-<set>-refill.tsv.gz)
#   grid-portfolio[:S]  the shipped portfolio on the first sweep's grid (gemm_sweep --grid: cubes
#                and products with one or two dimensions of 1-200 beside 1024-16384), where most
#                of today's entries were never timed, for at most S seconds (default 240;
#                gemm_sweep_<gpu>_issue28-grid-portfolio.tsv.gz)
#   layer-tokens[:S]  the shipped portfolio on the same layers with 2048-4096 tokens (the weight
#                gradients' k past the grid's 1536), for at most S seconds (default 300;
#                gemm_sweep_<gpu>_issue28-layer-tokens.tsv.gz)
#   vocab[:S]    the shipped portfolio on the vocabulary projections of models whose vocabulary
#                is not a multiple of 4 (gemm_sweep --vocab-networks: every pass and decoding),
#                for at most S seconds (default 300; gemm_sweep_<gpu>_issue28-vocab.tsv.gz)
#   ffn-grid[:S]  the shipped portfolio on the same mid-size models' feed-forward layers
#                (gemm_sweep --layer-grid --layer-ffn: 768-2048 up to and down from 3072-8192,
#                256-1536 tokens), for at most S seconds (default 360;
#                gemm_sweep_<gpu>_issue28-ffn-grid.tsv.gz)
#   tma-packed[:S]  the shipped H100 table's unpacked TMA-fed entries (bench/data/sweep_candidates/
#                gemm_sweep_candidates_tma_portfolio.txt), which the library serves packed on
#                unaligned problems, on the unaligned problems of the vocabulary set and the first
#                sets, for at most S seconds
#                (default 360; gemm_sweep_<gpu>_issue28-<set>-tma-packed.tsv.gz)
#   wgmma-n32[:S]  the split TF32 wgmma configs of 64 x 32 warpgroup tiles (bench/data/sweep_candidates/
#                gemm_sweep_candidates_wgmma_n32.txt) on the products of n up to 48 of the wgmma
#                step's sets, for at most S seconds (default 300; gemm_sweep_<gpu>_issue28-
#                wgmma-n32-<set>.tsv.gz)
#   rows-first[:S]  the split TF32 wgmma configs with VEC = 4 (bench/data/sweep_candidates/gemm_sweep_candidates_
#                wgmma_rows_first.txt: the candidate files' and the H100 table's), again on the
#                networks set, the second fitting set and the layer grid after their rows-adjacent
#                loads changed (gemm.cu kRowsFirst), for at most S seconds (default 420;
#                gemm_sweep_<gpu>_issue28-rows-first-<set>.tsv.gz): the refit reads them last, so
#                their rows replace the older kernels' of the same problem and config
#   lanes[:S]    the split TF32 wgmma configs of one consumer warpgroup at MINB 1 and 2 (bench/data/
#                sweep_candidates/gemm_sweep_candidates_wgmma_lanes.txt, and _<gpu>.txt where that GPU's
#                table holds more) on the large and middle strata, the networks set, the second
#                fitting set and the layer grid after narrow loads of rows-adjacent operands
#                changed (gemm.cu kLanesAlongRows), for at most S seconds (default 300;
#                gemm_sweep_<gpu>_issue28-lanes-<set>.tsv.gz), read last like the rows-first sweeps
#   rows-first-packed[:S]  those of them that pack their operands (PACK = 1, where VEC = 4 runs on
#                any alignment) on the large and middle strata, for at most S seconds (default 240;
#                gemm_sweep_<gpu>_issue28-rows-first-packed-<set>.tsv.gz), read last like them
#   gemv[:S]     the matrix-vector configs of every column class (gemm_sweep --gemv: GCOLS 1-16)
#                on the problems with m or n up to 16 of the second fitting set (decoding), the
#                grid, seeds 1-60 and 81-112 and the hard families' seeds 1000-1099, for at most
#                S seconds (default 400; gemm_sweep_<gpu>_issue28-gemv-<set>.tsv.gz)
#   hard[:S]     autotune 14 s each on 15 fitting shapes of the hard families (skinny with long k,
#                tiny k under a large C; none held out) into $WORK/hard.db, then their 2 fastest
#                configs per shape on the large stratum's hard families (gemm_sweep --hard-families,
#                seeds 3001-3032, >= 1 GFLOP), for at most S seconds (default 310;
#                gemm_sweep_<gpu>_issue28-hard-large.tsv.gz)
#   hard-nt[:S]  the same with 8 NT fitting shapes (-hard-large-nt.tsv.gz)
#   decode[:S]   autotune 14 s each on 6 decoding products of the fitting models (16-32 tokens,
#                aligned TN, k up to 28672) into $WORK/decode.db, then the portfolio and their 2
#                fastest configs per shape on the third fitting set (gemm_sweep --decode-networks),
#                for at most S seconds (default 300; gemm_sweep_<gpu>_issue28-decode.tsv.gz)
#   splits[:S]   split-count and occupancy variants of the table's split TF32 wgmma tiles up to
#                64 x 64 (bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_splits_<gpu>.txt: SPLITK 2-12
#                summed by the last block, MINB 1 and 2, PIPE 2 and 3) on the large stratum's hard
#                families, for at most S seconds (default 300; -hard-large-splits.tsv.gz)
#   minb3[:S]    the split TF32 wgmma 64 x 32 tile at three blocks per SM
#                (bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_minb3_<gpu>.txt) on the hard families
#                and the decoding set, for at most S seconds (default 300; -minb3.tsv.gz)
#   ahead[:S]    the 64 x 64 and 64 x 32 split TF32 wgmma tiles with the producer two slices
#                ahead (bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_ahead_<gpu>.txt) on the hard
#                families, the decoding set and the large stratum's fitting seeds (default 300 s;
#                -ahead.tsv.gz)
#   long[:S]     the shipped portfolio and the long-k configs (small tiles, 32-256 splits) on
#                products with one very long dimension (gemm_sweep --long: convolution-like
#                weight gradients and first layers), for at most S seconds (default 300;
#                gemm_sweep_<gpu>_issue28-long.tsv.gz)
#   fill[:S]     the table entries that came with the long set (bench/data/sweep_candidates/gemm_sweep_candidates_
#                issue28-fill_<gpu>.txt) on the second fitting set, the networks set and the large,
#                middle and small strata, so that the model judges them near every shape, not only
#                on the long products they were first timed on, for at most S seconds (default
#                300; gemm_sweep_<gpu>_issue28-<set>-fill.tsv.gz)
#   refresh[:S]  a GPU whose table predates issue 28 (H200): its own portfolio and another GPU's
#                table (bench/data/sweep_candidates/gemm_sweep_candidates_refresh_<gpu>.txt: the H100 table's
#                entries) on the fitting sets above, fewer seeds of each stratum, the long set and
#                the decoding products, for at most S seconds (default 540;
#                gemm_sweep_<gpu>_issue28-<set>-refresh.tsv.gz): the table refitted from them
#   tma-refresh[:S]  a GPU whose table has no TMA-fed entry (H200): the H100 table's TMA-fed entries,
#                those in one chain also in partial chains (bench/data/sweep_candidates/gemm_sweep_
#                candidates_tma_refresh_<gpu>.txt), on the refresh step's sets but the small stratum
#                and the matrix-vector ones; then with the GPU's own portfolio on the sets it has
#                no sweep of (the rest of the large and middle strata, the vocabulary projections,
#                the layer grid with 256-4096 tokens, its feed-forward layers, long sums under a
#                moderate output), for at most S seconds (default 540;
#                gemm_sweep_<gpu>_issue28-<set>-tma-refresh.tsv.gz)
#   networks     bench/gemm_networks, shipped data only (empty user database)
#   networks-fu  bench/gemm_networks with first-use tuning
#   large        gemm_random --min-gflop 1 --seeds 111,112,113, shipped data only
#   random       gemm_random seeds 101-103, shipped data only, with first calls
#   random-quick the same without the fresh-process first calls
#   firstcall    gemm_random's first 8 shapes of each seed with their first calls
#   suite        gemm_vs_cublas, shipped data only
#   tests        the GEMM GPU tests
#   tests:F      the GPU tests of gtest filter F
#   broken:F     the GPU tests of filter F on the kernel templates in $BROKEN_DIR (default
#                carry/broken/: a copy with a planted bug): they must fail
#                (gpu_tests_broken_<gpu>.log)
set -uo pipefail
WORK=${WORK:-/tmp/issue28}
mkdir -p "$WORK"
export LD_LIBRARY_PATH=$PWD/carry:${LD_LIBRARY_PATH:-}
[ -n "${SKIP_UNPACK:-}" ] || carry/zstd -d --long=30 -c carry/bins.tar.zst | tar -xf -
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >> "$OUT/device.txt"
tag=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1 | tr 'A-Z' 'a-z' |
  awk '{for (i = 2; i <= NF; i++) if ($i ~ /[0-9]/) {print $1 "-" $i; exit}}')
summary=()

tune() {  # tune LAYOUT SECONDS SHAPE...
  local layout=$1 budget=$2
  shift 2
  build/tools/autotune --op gemm --layout "$layout" --budget "$budget" --seed 1 \
    --db "$WORK/tune.db" $(printf -- '--shape %s ' "$@") < /dev/null \
    >> "$OUT/probe_autotune.txt" 2>> "$OUT/probe_progress.txt"
}

tune_each() {  # tune_each NAME LAYOUT:SHAPE...: autotune 14 s on each into $WORK/NAME.db
  local name=$1 s
  shift
  for s in "$@"; do
    build/tools/autotune --op gemm --layout "${s%%:*}" --shape "${s#*:}" --budget 14 --seed 2 \
      --db "$WORK/$name.db" < /dev/null >> "$OUT/${name//-/_}_autotune_${tag}.txt" \
      2>> "$OUT/${name//-/_}_progress.txt"
  done
}

# The problems of the issue's sweeps, one set a line: its name, then gemm_sweep's shape options.
SETS=("networks --networks --max-gflop 600" "large --seeds 3001-3032 --min-gflop 1"
      "middle --seeds 3101-3116 --min-gflop 0.1" "small --seeds 3201-3208 --min-gflop 0.01")
MORE_SETS=("more --more-networks --max-gflop 200")
KSUM_SETS=("ksum --seeds 3101-3104 --min-gflop 0.1")
KSUM_FIT_SETS=("ksum-middle --seeds 3105-3116 --min-gflop 0.1" "ksum-small --seeds 3201-3208 --min-gflop 0.01"
               "ksum-networks --networks --max-gflop 600" "ksum-large --seeds 3001-3032 --min-gflop 1"
               "ksum-more --more-networks --max-gflop 200")
GEMV_SETS=("gemv-decode --gemv --more-networks" "gemv-grid --gemv --grid"
           "gemv-random --gemv --seeds 1-60,81-112" "gemv-hard --gemv --hard-families --seeds 1000-1099")
LONG_SETS=("long --long")
FILL_SETS=("${MORE_SETS[@]}" "${SETS[@]}")
REFRESH_SETS=("${MORE_SETS[@]}" "networks --networks --max-gflop 600" "long --long"
              "gemv-decode --gemv --more-networks" "large --seeds 3001-3012 --min-gflop 1"
              "middle --seeds 3101-3108 --min-gflop 0.1" "small --seeds 3201-3204 --min-gflop 0.01"
              "gemv-random --gemv --seeds 1-30")
TMA_REFRESH_SETS=("networks --networks --max-gflop 600" "${MORE_SETS[@]}"
                  "large --seeds 3001-3012 --min-gflop 1" "long --long --only-candidates"
                  "middle --seeds 3101-3108 --min-gflop 0.1"
                  "large-b --seeds 3013-3022 --min-gflop 1 --portfolio"
                  "large-c --seeds 3023-3032 --min-gflop 1 --portfolio"
                  "middle-b --seeds 3109-3116 --min-gflop 0.1 --portfolio"
                  "vocab --vocab-networks --portfolio" "layer-grid --layer-grid --portfolio"
                  "layer-tokens --layer-grid --layer-tokens 2048 3072 4096 --portfolio"
                  "ffn-grid --layer-grid --layer-ffn --portfolio" "long-sums --long-sums --portfolio"
                  "small-b --seeds 3205-3208 --min-gflop 0.01 --portfolio")
# wgmma_sets ARRAY PREFIX [OPTIONS]: the wgmma steps' sets (networks, large stratum, second
# fitting set, middle stratum) named PREFIX-<set>, OPTIONS added to each.
wgmma_sets() {
  local -n sets_out=$1
  local prefix=$2 extra=${*:3}
  sets_out=("$prefix-networks --networks --max-gflop 600 $extra"
            "$prefix-large --seeds 3001-3032 --min-gflop 1 $extra"
            "$prefix-more --more-networks --max-gflop 200 $extra"
            "$prefix-middle --seeds 3101-3116 --min-gflop 0.1 $extra")
}
wgmma_sets WGMMA_SETS wgmma
wgmma_sets WGMMA_WAVES_SETS wgmma-waves
wgmma_sets TMA_SETS tma
# The long sums (k of 16384 or more) of the fitting sets and the long products, for the TMA-fed
# split TF32 configs with many splits; the long products' few rows under a million columns, for
# the staged-C FP64 tiles of 32 rows.
TMA_SPLITS_SETS=("tma-splits-more --more-networks --max-gflop 200 --min-k 16384"
                 "tma-splits-networks --networks --max-gflop 600 --min-k 16384"
                 "tma-splits-long --long --only-candidates --min-k 16384")
# Long sums under a moderate output (gemm_sweep --long-sums), for the TMA-fed split TF32 configs
# with slice sums in partial chains (issue 31).
LONG_SUMS_SETS=("long-sums --long-sums")
# The long sums (k of 16384 or more) of the fitting sets and the long products, for the same
# configs beside the configs timed there before.
CHAINS_SETS=("chains-more --more-networks --max-gflop 200 --min-k 16384"
             "chains-networks --networks --max-gflop 600 --min-k 16384"
             "chains-long --long --only-candidates --min-k 16384")
# The aligned fitting sets' sums past one chain's 4096 (the served form of one-chain TMA entries).
SERVED_SETS=("served-networks --networks --max-gflop 600 --min-k 4097"
             "served-more --more-networks --max-gflop 200 --min-k 4097")
THIN_C_SETS=("thin-c-long --long --only-candidates --max-k 128")
# The narrow products (n up to 48) of the same sets, for the 64 x 32 warpgroup tiles.
wgmma_sets WGMMA_N32_SETS wgmma-n32 --max-n 48
# Mid-size models' linear layers (gemm_sweep --layer-grid).
LAYER_GRID_SETS=("layer-grid --layer-grid")
GRID_PORTFOLIO_SETS=("grid-portfolio --grid")
LAYER_TOKENS_SETS=("layer-tokens --layer-grid --layer-tokens 2048 3072 4096")
VOCAB_SETS=("vocab --vocab-networks")
FFN_GRID_SETS=("ffn-grid --layer-grid --layer-ffn")
TMA_PACKED_SETS=("${VOCAB_SETS[@]}" "${SETS[@]}")
# The aligned sets, where VEC = 4 runs unpacked: the wgmma loads of issue 28's last change.
ROWS_FIRST_SETS=("rows-first-networks --networks --max-gflop 600"
                 "rows-first-more --more-networks --max-gflop 200" "rows-first-layer-grid --layer-grid")
LANES_SETS=("lanes-large --seeds 3001-3032 --min-gflop 1" "lanes-middle --seeds 3101-3116 --min-gflop 0.1"
            "lanes-networks --networks --max-gflop 600" "lanes-more --more-networks --max-gflop 200"
            "lanes-layer-grid --layer-grid")
ROWS_FIRST_PACKED_SETS=("rows-first-packed-large --seeds 3001-3032 --min-gflop 1"
                        "rows-first-packed-middle --seeds 3101-3116 --min-gflop 0.1")
# The hard families (gemm_sweep --hard-families: min(m, n) <= 256 with k >= 2000, k <= 128 under
# m * n >= 2^20) of the large stratum's seeds.
HARD_SETS=("hard-large --seeds 3001-3032 --min-gflop 1 --hard-families")
# Decoding 16-32 tokens of the fitting models (gemm_sweep --decode-networks).
DECODE_SETS=("decode --decode-networks")
MINB3_SETS=("${HARD_SETS[@]}" "${DECODE_SETS[@]}")
AHEAD_SETS=("${HARD_SETS[@]}" "${DECODE_SETS[@]}" "lanes-large --seeds 3001-3032 --min-gflop 1")
TF32_SETS=("tf32-networks --networks --max-gflop 600" "tf32-more --more-networks --max-gflop 200"
           "tf32-large --seeds 3001-3032 --min-gflop 1" "tf32-middle --seeds 3101-3116 --min-gflop 0.1")

# sweep_sets SUFFIX SECONDS ARGS...: gemm_sweep ARGS on every set of SWEEP (default SETS),
# resumed, for at most SECONDS in all; each set's rows in $WORK/<set>SUFFIX.tsv and back in $OUT
# as the file bench/data/sweeps keeps. A set cut short on an earlier machine goes on from the rows
# carried in carry/sweeps/. ONLY_SETS (set names, ' '-separated) keeps those alone: one GPU's share
# where the GPUs of one machine sweep a step's sets side by side.
sweep_sets() {
  local suffix=$1 deadline=$(( $(date +%s) + $2 )) set name args
  shift 2
  local -n sets=${SWEEP:-SETS}
  for set in "${sets[@]}"; do
    read -r name args <<< "$set"
    [[ -z "${ONLY_SETS:-}" || " $ONLY_SETS " == *" $name "* ]] || continue
    local left=$(( deadline - $(date +%s) )) file="$WORK/$name$suffix.tsv"
    local kept="gemm_sweep_${tag}_issue28-$name$suffix.tsv.gz"
    [ "$left" -gt 20 ] || break
    [ ! -f "$file" ] && [ -f "carry/sweeps/$kept" ] && zcat "carry/sweeps/$kept" > "$file"
    build/bench/gemm_sweep "$@" --cubin-db "$WORK/cubins.db" --resume --out "$file" \
      --max-seconds "$left" $args 2>> "$OUT/sweep_progress.txt"
    gzip -c "$file" > "$OUT/$kept"
  done
}

# sweep_step NAME SECONDS SETS SUFFIX ARGS...: step NAME[:S], sweep_sets SUFFIX ARGS on the sets
# of the array named SETS for at most S seconds (default SECONDS), then its progress in the summary.
sweep_step() {
  local name=$1 seconds=$2 array=$3 suffix=$4 budget
  shift 4
  budget=${step#"$name"}
  budget=${budget#:}
  SWEEP=$array sweep_sets "$suffix" "${budget:-$seconds}" "$@"
  summary+=("$name: $(grep -v '^skip' "$OUT/sweep_progress.txt" | tail -n 2 | tr '\n' ' ')")
}

for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    accuracy)
      build/tests/tuned_gpu_tests --gtest_color=no --gtest_filter='GemmAccuracy.*' \
        > "$OUT/gpu_tests_accuracy_${tag}.log" 2>&1
      rc=$?
      summary+=("accuracy rc=$rc: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests_accuracy_${tag}.log" | tr '\n' ' ')")
      if [ $rc -ne 0 ]; then printf '%s\n' "${summary[@]}"; tail -40 "$OUT/gpu_tests_accuracy_${tag}.log"; exit 1; fi ;;
    probe)
      tune NN 60 4096x4096x4096 8192x8192x8192
      tune NN 120 4097x4097x4097 2048x2048x2048 1024x1024x1024 1000x1000x1000 12345x678x910 \
        3000x200x5000 1000x1000x8000 16384x16384x64
      tune NN 20 64x2048x8192 768x768x768
      tune NT 45 4096x4096x4096 4608x6144x2000 3072x768x16384
      tune TN 45 4096x4096x4096 11008x4096x4096 5001x3000x2047
      tune TT 30 4096x4096x4096 2999x5000x1500
      # The trials without their cubins: small enough to come back.
      python3 -c "import sqlite3; s = sqlite3.connect('$WORK/tune.db'); d = sqlite3.connect('$WORK/probe.db'); s.backup(d); d.execute('DELETE FROM cubins'); d.commit(); d.execute('VACUUM')"
      gzip -c "$WORK/probe.db" > "$OUT/probe.db.gz"
      build/tools/tunedb --db "$WORK/tune.db" export --format shipped > "$OUT/probe_shipped.tsv"
      summary+=("probe: $(grep -c . "$OUT/probe_shipped.tsv") bests") ;;
    sweep|sweep:*)
      from_db=()
      [ -f "$WORK/tune.db" ] && from_db=(--candidates-from-db "$WORK/tune.db" --top 4)
      sweep_step sweep 500 SETS "" --portfolio \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_issue28_${tag}.txt" "${from_db[@]}" ;;
    probe-more)
      tune NT 25 147x64x1605632 576x64x401408 1152x128x100352
      summary+=("probe-more: $(grep -c . "$OUT/probe_autotune.txt") lines of autotune output") ;;
    more|more:*)
      cat bench/data/sweep_candidates/gemm_sweep_candidates_issue28*_"${tag}".txt > "$WORK/candidates.txt"
      from_db=()
      [ -f "$WORK/tune.db" ] && from_db=(--candidates-from-db "$WORK/tune.db" --top 4)
      sweep_step more 420 MORE_SETS "" --portfolio --candidates "$WORK/candidates.txt" \
        "${from_db[@]}" ;;
    ksum|ksum:*)
      sweep_step ksum 240 KSUM_SETS "" --portfolio \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_ksum_${tag}.txt" ;;
    ksum-fit|ksum-fit:*)
      sweep_step ksum-fit 300 KSUM_FIT_SETS "" \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_ksum_${tag}.txt" ;;
    tf32|tf32:*)
      sweep_step tf32 500 TF32_SETS "" \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_tf32_${tag}.txt" ;;
    wgmma|wgmma:*)
      sweep_step wgmma 300 WGMMA_SETS "" --candidates bench/data/sweep_candidates/gemm_sweep_candidates_wgmma.txt ;;
    tma-splits|tma-splits:*)
      sweep_step tma-splits 200 TMA_SPLITS_SETS "" \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_tma_splits.txt ;;
    thin-c|thin-c:*)
      sweep_step thin-c 60 THIN_C_SETS "" --candidates bench/data/sweep_candidates/gemm_sweep_candidates_thin_c.txt ;;
    tma|tma:*)
      sweep_step tma 240 TMA_SETS "" --candidates bench/data/sweep_candidates/gemm_sweep_candidates_tma.txt ;;
    wgmma-waves|wgmma-waves:*)
      sweep_step wgmma-waves 420 WGMMA_WAVES_SETS "" \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_waves.txt ;;
    layer-grid|layer-grid:*)
      cat bench/data/sweep_candidates/gemm_sweep_candidates_wgmma.txt \
        bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_waves.txt > "$WORK/layer_candidates.txt"
      sweep_step layer-grid 420 LAYER_GRID_SETS "" --portfolio \
        --candidates "$WORK/layer_candidates.txt" ;;
    refill|refill:*)
      sweep_step refill 400 SETS -refill --portfolio ;;
    grid-portfolio|grid-portfolio:*)
      sweep_step grid-portfolio 240 GRID_PORTFOLIO_SETS "" --portfolio ;;
    layer-tokens|layer-tokens:*)
      sweep_step layer-tokens 300 LAYER_TOKENS_SETS "" --portfolio ;;
    vocab|vocab:*)
      sweep_step vocab 300 VOCAB_SETS "" --portfolio ;;
    ffn-grid|ffn-grid:*)
      sweep_step ffn-grid 360 FFN_GRID_SETS "" --portfolio ;;
    tma-packed|tma-packed:*)
      sweep_step tma-packed 360 TMA_PACKED_SETS -tma-packed --unaligned \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_tma_portfolio.txt ;;
    wgmma-n32|wgmma-n32:*)
      sweep_step wgmma-n32 300 WGMMA_N32_SETS "" \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_n32.txt ;;
    rows-first|rows-first:*)
      sweep_step rows-first 420 ROWS_FIRST_SETS "" \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_rows_first.txt ;;
    rows-first-packed|rows-first-packed:*)
      grep -v '^#' bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_rows_first.txt | grep 'PACK=1' \
        > "$WORK/packed_candidates.txt"
      sweep_step rows-first-packed 240 ROWS_FIRST_PACKED_SETS "" \
        --candidates "$WORK/packed_candidates.txt" ;;
    lanes|lanes:*)
      cat bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_lanes.txt \
        bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_lanes_"${tag}".txt 2>/dev/null | grep -v '^#' \
        > "$WORK/lanes_candidates.txt"
      sweep_step lanes 300 LANES_SETS "" --candidates "$WORK/lanes_candidates.txt" ;;
    gemv|gemv:*)
      sweep_step gemv 400 GEMV_SETS "" ;;
    hard|hard:*)
      # Configs for the hard families, found by autotune on fitting shapes of those kinds, skinny
      # with long k and tiny k under a large C, none held out; their 2 fastest per shape then timed
      # on the hard families of the large stratum, rows the fit joins to the portfolio's there.
      tune_each hard NT:6123x19x7001 NT:9001x29x4500 TN:5003x21x6007 TT:5555x27x5003 \
        TN:3001x40x9001 NN:7001x25x6001 TT:7777x33x4001 NT:311x181x8887 TT:91x1201x6003 \
        TN:4097x16x12288 NN:1001x23x12007 TN:1999x12001x47 NT:8501x11001x19 TN:6999x2601x31 \
        NN:3001x9001x41
      sweep_step hard 310 HARD_SETS "" --candidates-from-db "$WORK/hard.db" --top 2 ;;
    hard-nt|hard-nt:*)
      # The same for NT, where the large stratum's last hard-family misses were (H100: three of
      # four), on 8 more fitting shapes; rows in gemm_sweep_<gpu>_issue28-hard-large-nt.tsv.gz.
      tune_each hard-nt NT:8001x35x5501 NT:7501x31x4001 NT:487x211x8111 NT:263x157x10007 \
        NT:9501x13001x21 NT:6003x9007x27 NT:5211x40x6017 NT:3301x27x9013
      sweep_step hard-nt 310 HARD_SETS -nt --candidates-from-db "$WORK/hard-nt.db" --top 2 ;;
    splits|splits:*)
      # Small wgmma tiles at other split counts and occupancies (autotune, in diagnosis, found the
      # table's 64 x 64 tile faster on an NT loser at 6 splits and two blocks per SM). Measured,
      # not fitted: refitted in, its picks ran slower (gemm_hard_families_probe_nvidia-h100.txt).
      sweep_step splits 300 HARD_SETS -splits \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_splits_${tag}.txt" ;;
    minb3|minb3:*)
      # The split TF32 wgmma 64 x 32 tile at three blocks per SM (more loads in flight: on skinny
      # long-k TN and TT products its producer waits on memory at two), on the hard families and
      # the decoding set: gemm_sweep_<gpu>_issue28-{hard-large,decode}-minb3.tsv.gz.
      sweep_step minb3 300 MINB3_SETS -minb3 \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_minb3_${tag}.txt" ;;
    ahead|ahead:*)
      # The small split TF32 wgmma tiles with the producer two slices ahead (AHEAD=1), on the hard
      # families, the decoding set and the large stratum's fitting seeds:
      # gemm_sweep_<gpu>_issue28-{hard-large,decode,lanes-large}-ahead.tsv.gz.
      sweep_step ahead 300 AHEAD_SETS -ahead \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_wgmma_ahead_${tag}.txt" ;;
    decode|decode:*)
      # Decoding steps past the matrix-vector kernel's reach (16-32 tokens): configs autotune finds
      # on 6 of them, beside the portfolio, on all of the third fitting set's.
      tune_each decode TN:4096x16x11008 TN:8192x24x28672 TN:2048x32x8192 TN:18176x16x4544 \
        TN:4544x24x18176 TN:10240x32x2560
      sweep_step decode 300 DECODE_SETS "" --portfolio --candidates-from-db "$WORK/decode.db" \
        --top 2 ;;
    portfolio|portfolio:*)
      # The shipped portfolio alone on the same problems (the first sweeps missed its entries
      # recorded before MMA and CSTAGE existed): rows the fit joins to those problems.
      sweep_step portfolio 540 SETS -portfolio --portfolio ;;
    long|long:*)
      sweep_step long 300 LONG_SETS "" --portfolio ;;
    chains|chains:*)
      sweep_step chains 200 CHAINS_SETS "" \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_tma_chains.txt ;;
    served|served:*)
      sweep_step served 120 SERVED_SETS "" \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_tma_served.txt ;;
    long-sums|long-sums:*)
      sweep_step long-sums 400 LONG_SUMS_SETS "" --portfolio \
        --candidates bench/data/sweep_candidates/gemm_sweep_candidates_tma_chains.txt ;;
    fill|fill:*)
      sweep_step fill 300 FILL_SETS -fill \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_issue28-fill_${tag}.txt" ;;
    tma-refresh|tma-refresh:*)
      sweep_step tma-refresh 540 TMA_REFRESH_SETS -tma-refresh \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_tma_refresh_${tag}.txt" ;;
    refresh|refresh:*)
      sweep_step refresh 540 REFRESH_SETS -refresh --portfolio \
        --candidates "bench/data/sweep_candidates/gemm_sweep_candidates_refresh_${tag}.txt" ;;
    networks)
      build/bench/gemm_networks --no-user-db --json "$OUT/gemm_networks_${tag}.json" \
        > "$OUT/gemm_networks_${tag}.txt" 2>&1
      summary+=("networks rc=$?: $(grep -iE 'time-weighted|geometric|worst' "$OUT/gemm_networks_${tag}.txt" | tr '\n' ' ')") ;;
    networks-fu)
      build/bench/gemm_networks --first-use --json "$OUT/gemm_networks_first_use_${tag}.json" \
        > "$OUT/gemm_networks_first_use_${tag}.txt" 2>&1
      summary+=("networks-fu rc=$?: $(grep -iE 'time-weighted|geometric|worst' "$OUT/gemm_networks_first_use_${tag}.txt" | tr '\n' ' ')") ;;
    large)
      build/bench/gemm_random --no-user-db --min-gflop 1 --seeds 111,112,113 --no-first-call \
        --json "$OUT/gemm_random_large_${tag}.json" > "$OUT/gemm_random_large_${tag}.txt" 2>&1
      summary+=("large rc=$?: $(grep -iE 'geometric|worst|time-weighted' "$OUT/gemm_random_large_${tag}.txt" | tr '\n' ' ')") ;;
    random)
      build/bench/gemm_random --no-user-db --json "$OUT/gemm_random_${tag}.json" \
        > "$OUT/gemm_random_${tag}.txt" 2>&1
      summary+=("random rc=$?: $(grep -iE 'geometric|worst|time-weighted|first call' "$OUT/gemm_random_${tag}.txt" | tr '\n' ' ')") ;;
    random-quick)
      build/bench/gemm_random --no-user-db --no-first-call --json "$OUT/gemm_random_${tag}.json" \
        > "$OUT/gemm_random_${tag}.txt" 2>&1
      summary+=("random-quick rc=$?: $(grep -iE 'geometric|worst|time-weighted' "$OUT/gemm_random_${tag}.txt" | tr '\n' ' ')") ;;
    firstcall)
      build/bench/gemm_random --no-user-db --count 8 --json "$OUT/gemm_random_first_call_${tag}.json" \
        > "$OUT/gemm_random_first_call_${tag}.txt" 2>&1
      summary+=("firstcall rc=$?: $(grep -iE 'first call' "$OUT/gemm_random_first_call_${tag}.txt" | tr '\n' ' ')") ;;
    suite)
      build/bench/gemm_vs_cublas --no-user-db --json "$OUT/gemm_shipped_${tag}.json" \
        > "$OUT/gemm_shipped_${tag}.txt" 2>&1
      summary+=("suite rc=$?: $(grep -i geometric "$OUT/gemm_shipped_${tag}.txt" | tail -1)") ;;
    tests)
      build/tests/tuned_gpu_tests --gtest_color=no \
        --gtest_filter='GemmFamilies.*:TunedGemm.*:GraphCapture.*:AutotuneEndToEnd.*:DeviceCheckCompare.*:GemmLimits.*:GemmAccuracy*:SelectionPortfolio*' \
        > "$OUT/gpu_tests_${tag}.log" 2>&1
      summary+=("tests rc=$?: $(grep -E '^\[  (PASSED|FAILED) ' "$OUT/gpu_tests_${tag}.log" | tr '\n' ' ')") ;;
    tests:*)
      build/tests/tuned_gpu_tests --gtest_color=no --gtest_filter="${step#tests:}" \
        > "$OUT/gpu_tests_some_${tag}.log" 2>&1
      summary+=("tests rc=$?: $(grep -E '^\[  (PASSED|FAILED|  FAILED) ' "$OUT/gpu_tests_some_${tag}.log" | tr '\n' ' ')") ;;
    broken:*)
      TUNED_TEMPLATE_DIR=${BROKEN_DIR:-$PWD/carry/broken} build/tests/tuned_gpu_tests --gtest_color=no \
        --gtest_filter="${step#broken:}" > "$OUT/gpu_tests_broken_${tag}.log" 2>&1
      summary+=("broken rc=$? (must fail): $(grep -E '^\[  (PASSED|FAILED|  FAILED) ' "$OUT/gpu_tests_broken_${tag}.log" | tr '\n' ' ')") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  summary[-1]+=" ($(( $(date +%s) - start )) s)"
done
printf '%s\n' "${summary[@]}"
