#!/usr/bin/env bash
# Packs built binaries for a GPU machine (which has cuBLAS, NVRTC and libsqlite3 but no compiler
# toolchain for this project): carry/bins.tar.zst holds the named build/ outputs, carry/ the zstd
# to unpack them and the shared libraries they need beyond the machine's own. Each binary embeds
# the same precompiled kernels, so zstd's long window (1 GiB: all of them) packs them into little
# more than one.
#   scripts/pack_bins.sh build/tools/autotune build/bench/gemm_sweep ...
# Then: device run with carry ["carry"] and the step script (e.g. scripts/issue28_runs.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p carry
cp /usr/bin/zstd carry/
cp "$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')" carry/
tar -cf - "$@" | zstd -q -19 --long=30 -T0 -f -o carry/bins.tar.zst
ls -la carry
