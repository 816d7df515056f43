#!/usr/bin/env bash
# The GPU test suite spread over the machine's GPUs (the whole suite takes over 10 minutes on one
# GPU, longer than one device call): test groups as gtest filters, group i on GPU i mod gpus, each
# pinned to its share of the cores, each cut at $LIMIT seconds (default 540) so its log comes back.
# Logs under $OUT/gpu-tests; a table of passed/failed/skipped per group is printed last.
#   BIN=carry/bin scripts/gpu_tests.sh            (BIN: a build folder with tests/tuned_gpu_tests)
# Tests that need two GPUs skip here: each group sees one GPU.
set -uo pipefail
BIN=${BIN:-build}
OUT=${OUT:-out}
LIMIT=${LIMIT:-540}
mkdir -p "$OUT/gpu-tests"
GROUPS_=("GemmFamilies.*" "Entropy.*:Transpose.*:Workspaces.*:GraphCapture.*"
  "GemmLimits.*:GemmUnderSanitizer.*"
  "-GemmFamilies.*:Entropy.*:Transpose.*:Workspaces.*:GraphCapture.*:GemmLimits.*:GemmUnderSanitizer.*")
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
[ "$gpus" -ge 1 ] || { echo "gpu_tests: no GPU"; exit 2; }
share=$(($(nproc) / gpus))
for ((g = 0; g < gpus && g < ${#GROUPS_[@]}; g++)); do
  (
    for ((i = g; i < ${#GROUPS_[@]}; i += gpus)); do
      CUDA_VISIBLE_DEVICES=$g taskset -c $((g * share))-$((g * share + share - 1)) \
        timeout "$LIMIT" "$BIN/tests/tuned_gpu_tests" --gtest_filter="${GROUPS_[$i]}" \
        >"$OUT/gpu-tests/group$i.log" 2>&1
      echo "rc=$?" >>"$OUT/gpu-tests/group$i.log"
    done
  ) &
done
wait
tar -C "$OUT" -czf "$OUT/gpu-tests.tar.gz" gpu-tests
rc=0
printf '%-6s %6s %6s %7s %5s  %s\n' group passed failed skipped rc filter
for ((i = 0; i < ${#GROUPS_[@]}; i++)); do
  log="$OUT/gpu-tests/group$i.log"
  p=$(grep -c '^\[       OK \]' "$log")
  # gtest names a failed or skipped test twice (as it ends and in the summary): count names once
  f=$(grep '^\[  FAILED  \] [A-Za-z]*\.[A-Za-z]' "$log" | awk '{print $4}' | sort -u | wc -l)
  s=$(grep '^\[  SKIPPED \] [A-Za-z]*\.[A-Za-z]' "$log" | awk '{print $4}' | sort -u | wc -l)
  r=$(tail -n 1 "$log" | sed 's/rc=//')
  printf '%-6s %6s %6s %7s %5s  %s\n' "$i" "$p" "$f" "$s" "$r" "${GROUPS_[$i]:0:60}"
  [ "$r" = 0 ] || rc=1
done
grep -h '^\[  FAILED  \] [A-Za-z]*\.[A-Za-z]' "$OUT"/gpu-tests/*.log | awk '{print "failed:", $4}' | sort -u
exit $rc
