#!/usr/bin/env bash
# Issue 30's GPU checks of the Python package, with the library and the autotune program built
# here and carried: carry/libtuned.so.zst (zstd of build-shared/libtuned.so), carry/autotune.zst,
# carry/zstd (+ its libzstd), carry/network_shapes.txt (build/bench/gemm_networks --print-shapes),
# carry/libc_call_floor.so (python/bench/c_call_floor.c) and python/tuned/_native.abi3.so
# (the package's extension, stable ABI). Each argument one step;
# logs under $OUT; a short table last.
#   reader     tuned.build_torch_reader(): the torch reader compiled against this torch (the
#              steps after it use it)
#   tests      python/gpu_tests (unittest): every call against FP64, strides, producers, the torch
#              op eager / compiled / captured, record -> autotune --shapes-from -> rerun "exact"
#   block      python/gpu_tests/torch_op_check.py: a transformer block through the torch op,
#              eager and compiled, errors and times against torch.matmul
#   overhead   python/bench/call_overhead.py: host time per tiny call, Python against C
#   networks   python/bench/mm_vs_torch.py on the gemm_networks layers
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT}"
export LD_LIBRARY_PATH="/tmp/tuned-py:$PWD/carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
work=/tmp/tuned-py
mkdir -p "$work"
carry/zstd -q -d --long=30 -f carry/libtuned.so.zst -o "$work/libtuned.so"
carry/zstd -q -d --long=30 -f carry/autotune.zst -o "$work/autotune" && chmod +x "$work/autotune"
export TUNED_LIBRARY="$work/libtuned.so" TUNED_AUTOTUNE="$work/autotune" \
  TUNED_DB="$work/tuned.db" PYTHONPATH="$PWD/python" TORCH_EXTENSIONS_DIR="$work/torch-extensions"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
tag=$(echo "$gpu" | tr 'A-Z' 'a-z' | grep -oE 'h100|h200' | head -1)
echo "device: $gpu" | tee "$OUT/device.txt"
python3 -c "import sys, torch, tuned; print('python', sys.version.split()[0], 'torch', \
torch.__version__, 'tuned', tuned.version, 'native', tuned._native is not None)" \
  | tee -a "$OUT/device.txt"
summary=()
for step in "$@"; do
  start=$(date +%s)
  case "$step" in
    reader)
      python3 -c "import tuned; tuned.build_torch_reader(verbose=False); \
print('torch reader:', tuned._torch_reader() is not None)" > "$OUT/torch_reader_${tag}.log" 2>&1
      summary+=("reader rc=$?: $(tail -1 "$OUT/torch_reader_${tag}.log")") ;;
    tests)
      python3 -m unittest discover -s python/gpu_tests -v > "$OUT/python_gpu_tests_${tag}.log" 2>&1
      summary+=("tests rc=$?: $(tail -3 "$OUT/python_gpu_tests_${tag}.log" | tr '\n' ' ')") ;;
    block)
      python3 python/gpu_tests/torch_op_check.py > "$OUT/python_torch_op_nvidia-${tag}.log" 2>&1
      summary+=("block rc=$?: $(grep -E 'block time|failures' "$OUT/python_torch_op_nvidia-${tag}.log" | tr '\n' ' ')") ;;
    overhead)
      python3 python/bench/call_overhead.py --c-floor carry/libc_call_floor.so \
        > "$OUT/python_call_overhead_nvidia-${tag}.txt" 2>&1
      summary+=("overhead rc=$?: $(tail -4 "$OUT/python_call_overhead_nvidia-${tag}.txt" | tr '\n' ' ')") ;;
    networks)
      python3 python/bench/mm_vs_torch.py carry/network_shapes.txt \
        --out "$OUT/python_matmul_nvidia-${tag}.json" > "$OUT/mm_vs_torch_${tag}.log" 2>&1
      summary+=("networks rc=$?: $(grep -E 'time_weighted|geomean|worst' "$OUT/mm_vs_torch_${tag}.log" | tr '\n' ' ')") ;;
    *) summary+=("unknown step $step") ;;
  esac
  summary[-1]="${summary[-1]} ($(( $(date +%s) - start )) s)"
done
printf '%s\n' "${summary[@]}"
