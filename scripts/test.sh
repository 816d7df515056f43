#!/usr/bin/env bash
# Builds tuned and runs every test: CPU tests always; GPU tests (ctest label gpu) run where a GPU
# is present and report themselves skipped, with the reason, where none is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
# Shared: the libtuned.so and autotune the wheel below bundles are this build's, and ctest tests
# them as they ship (the install test builds the static kind beside).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON
cmake --build build -j"$(nproc)"
# The tuning store's tests run against a throwaway PostgreSQL server (stopped on exit), and must:
# TUNED_REQUIRE_STORE turns their skip into a failure.
store_dir=$(mktemp -d "${TMPDIR:-/tmp}/tuned-store.XXXXXX")
chmod 755 "$store_dir"
stop_store() { scripts/pg_test_cluster.sh stop "$store_dir"; rm -rf "$store_dir"; }
trap stop_store EXIT
TUNED_TEST_STORE=$(scripts/pg_test_cluster.sh start "$store_dir")
export TUNED_TEST_STORE TUNED_REQUIRE_STORE=1
# The report's browser test runs in headless Chromium (installed above), and must.
export TUNED_REQUIRE_BROWSER=1
ctest --test-dir build --output-on-failure -j"$(nproc)"
# The Python wheel, made and installed as the README says (offline: the build backend from
# Debian's packages) in a folder outside the repository: it bundles the library and autotune that
# `cmake --install` wrote (their run paths the install's, no build folder), and its C extension.
work=$(mktemp -d "${TMPDIR:-/tmp}/tuned-ci.XXXXXX")
trap 'rm -rf "$work"; stop_store' EXIT
cmake --install build --prefix "$work/prefix" >/dev/null
library=$(find "$work/prefix" -name 'libtuned.so.*.*.*' | head -n 1)
/usr/bin/python3 -m venv --system-site-packages "$work/build-env"
TUNED_LIBRARY="$library" TUNED_AUTOTUNE="$work/prefix/bin/autotune" "$work/build-env/bin/pip" wheel \
  --no-build-isolation --no-index --no-deps --quiet -w "$work/dist" ./python
wheel=$(echo "$work"/dist/tuned-*.whl)
/usr/bin/python3 -m venv --system-site-packages "$work/env"
start=$EPOCHREALTIME
"$work/env/bin/pip" install --no-index --quiet "$wheel"
awk -v s="$start" -v e="$EPOCHREALTIME" -v w="$(basename "$wheel")" \
  'BEGIN { printf "installed %s in a fresh environment in %.1f s\n", w, e - s }'
package=$("$work/env/bin/python" -c 'import os, tuned; print(os.path.dirname(tuned.__file__))')
# The artifact's sizes, bounded: the kernels are held compressed, by libtuned alone.
size_check() {  # what, file, limit in MB
  awk -v what="$1" -v file="$2" -v bytes="$(stat -c %s "$2")" -v limit="$3" 'BEGIN {
    printf "%-12s %6.1f MB (at most %d MB)  %s\n", what, bytes / 1e6, limit, file
    if (bytes > limit * 1e6) { printf "%s is larger than %d MB\n", what, limit > "/dev/stderr"; exit 1 }
  }'
}
size_check wheel "$wheel" 60
size_check libtuned.so "$(echo "$package"/lib/libtuned.so*)" 40
size_check autotune "$package/bin/autotune" 40
# Imported from outside the repository; its CPU tests run against the installed package.
(cd "$work" && env/bin/python -c \
  "import tuned, tuned_gpu; print('tuned', tuned.version, 'native', tuned._native is not None)")
(cd "$work" && TUNED_TEST_INSTALLED=1 env/bin/python -m unittest discover -s "$OLDPWD/python/tests" -v)
# Its GPU tests report themselves skipped, with the reason, where torch or a GPU is missing.
(cd "$work" && TUNED_TEST_INSTALLED=1 env/bin/python -m unittest discover -s "$OLDPWD/python/gpu_tests" \
  -v 2>&1 | grep -m1 -E "skipped '" || true)
(cd "$work" && TUNED_TEST_INSTALLED=1 env/bin/python -m unittest discover -s "$OLDPWD/python/gpu_tests")
# The runtime's thread-safety test once more, built with ThreadSanitizer: a data race fails here.
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS=-fsanitize=thread \
  "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=thread -Wl,--as-needed" -DTUNED_BUILD_BENCH=OFF \
  -DTUNED_PRECOMPILE=OFF
cmake --build build-tsan -j"$(nproc)" --target tuned_cpu_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
  ./build-tsan/tests/tuned_cpu_tests --gtest_filter='RuntimeRace.*'
# ctest hides the output of skipped tests: say once why the GPU tests were skipped, if they were.
if ./build/tests/tuned_gpu_tests --gtest_filter='TunedGemm.KZeroGivesBetaTimesC' 2>&1 |
    grep -m1 "GPU test skipped"; then
  echo "(the GPU tests above were skipped for that reason; they run where a CUDA device is present)"
fi
