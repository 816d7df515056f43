#!/usr/bin/env bash
# One device lease for issue 10's GEMM families, from binaries built on the CPU machine (build/
# carried). Steps, in the order given; logs and results under $OUT (or ./out), a short table last:
#   families  bench/gemm_families (seed 201 + the named family shapes, BUDGET s each, default 60)
#             -> $OUT/gemm_families_<tag>.json, its tuning database $OUT/families.db
#   suite     bench/gemm_vs_cublas with shipped data only -> $OUT/gemm_shipped_<tag>.json
#   random    bench/gemm_random, seeds 101-103, shipped data only -> $OUT/gemm_random_<tag>.json
set -uo pipefail
out=${OUT:-out}
mkdir -p "$out"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
tag=$(echo "$name" | tr 'A-Z' 'a-z' | awk '{for (i = 2; i <= NF; i++) if ($i ~ /[0-9]/) {print $1 "-" $i; exit}}')
summary=()
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    families)
      ./build/bench/gemm_families --budget "${BUDGET:-60}" --db "$out/families.db" \
        --json "$out/gemm_families_$tag.json" > "$out/gemm_families_$tag.txt" 2>&1
      rc=$?
      summary+=("families rc=$rc: $(tail -n 1 "$out/gemm_families_$tag.txt")") ;;
    suite)
      ./build/bench/gemm_vs_cublas --no-user-db --json "$out/gemm_shipped_$tag.json" \
        > "$out/gemm_shipped_$tag.txt" 2>&1
      rc=$?
      summary+=("suite rc=$rc: $(grep '^geometric' "$out/gemm_shipped_$tag.txt")") ;;
    random)
      ./build/bench/gemm_random --no-user-db --no-first-call --json "$out/gemm_random_$tag.json" \
        > "$out/gemm_random_$tag.txt" 2>&1
      rc=$?
      summary+=("random rc=$rc: $(grep -iE '^geometric|below' "$out/gemm_random_$tag.txt" | tr '\n' ' ')") ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
  echo "== $step done in $(( $(date +%s) - start )) s"
done
echo
echo "== summary on $name =="
for line in "${summary[@]}"; do echo "$line"; done
