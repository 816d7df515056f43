#!/usr/bin/env bash
# Builds tuned and runs every test: CPU tests always; GPU tests (ctest label gpu) run where a GPU
# is present and report themselves skipped, with the reason, where none is.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"
# The Python package: installed with pip (the README's command, offline: the build backend from
# Debian's packages) into a fresh environment with the shared libtuned the install test built (or
# this build's own, where it is the shared one) bundled and its C extension compiled; imported
# outside the repository; its CPU tests run against the installed package.
python_library=build/install-check/shared/prefix/lib/libtuned.so
[ -e "$python_library" ] || python_library=build/libtuned.so
rm -rf build/python-env
/usr/bin/python3 -m venv --system-site-packages build/python-env
TUNED_LIBRARY="$PWD/$python_library" build/python-env/bin/pip install --no-build-isolation \
  --no-index --quiet ./python
(cd /tmp && "$OLDPWD/build/python-env/bin/python" -c \
  "import tuned; print('tuned', tuned.version, 'native', tuned._native is not None)")
TUNED_TEST_INSTALLED=1 build/python-env/bin/python -m unittest discover -s python/tests -v
# Its GPU tests report themselves skipped, with the reason, where torch or a GPU is missing.
TUNED_TEST_INSTALLED=1 build/python-env/bin/python -m unittest discover -s python/gpu_tests -v 2>&1 |
  grep -m1 -E "skipped '" || true
TUNED_TEST_INSTALLED=1 build/python-env/bin/python -m unittest discover -s python/gpu_tests
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
