#!/usr/bin/env bash
# Packs built binaries for a GPU machine (which has cuBLAS, NVRTC and libsqlite3 but no compiler
# toolchain for this project): carry/bin.tar.zst holds the named outputs of one build folder under
# bin/ (same relative paths, so a test finds ../tools/autotune), carry/ the zstd to unpack them and
# bin/ the libgomp they need beyond the machine's own. The device takes at most 64 MiB with the
# tracked tree (about 51 MB): build with -DBUILD_SHARED_LIBS=ON so that the precompiled kernels
# (230 MB, 11 MB packed) sit once in libtuned.so (bin/lib), not in every binary.
#   scripts/pack_bins.sh build-shared tools/autotune bench/gemm_picks tests/tuned_gpu_tests ...
# Then on the device: cd carry && ./zstd -dc --long=30 bin.tar.zst | tar -xf - && cd .. &&
#   export LD_LIBRARY_PATH=$PWD/carry/bin/lib:$PWD/carry/bin   (BIN=carry/bin for the scripts)
set -euo pipefail
cd "$(dirname "$0")/.."
build=$1
shift
rm -rf carry/bin carry/bin.tar.zst
mkdir -p carry/bin/lib
cp /usr/bin/zstd carry/
cp "$(ldconfig -p | awk '/libgomp.so.1 /{print $NF; exit}')" carry/bin/
for so in "$build"/libtuned.so.*.*.*; do
  [ -e "$so" ] && cp "$so" "carry/bin/lib/$(basename "${so%.*}")"  # the soname the binaries ask for
done
for f in "$@"; do
  mkdir -p "carry/bin/$(dirname "$f")"
  cp "$build/$f" "carry/bin/$f"
done
find carry/bin -type f ! -name 'libgomp*' -exec strip {} +
# zstd's long window (1 GiB) packs kernels that several files hold into little more than one.
(cd carry && tar -cf - bin | ./zstd -q --ultra -22 --long=30 -T0 -o bin.tar.zst)
ls -la carry/bin.tar.zst
