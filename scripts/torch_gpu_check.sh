#!/usr/bin/env bash
# The Python package on one GPU machine, from the wheel alone: install it into a fresh venv beside the
# machine's torch (timed), import tuned and run a product, then the library's batch/epilogue GPU
# tests (the test binary linked to the wheel's libtuned), the Python GPU tests against the
# installed package, and the torch benchmark (bench/results/python_<gpu>.json).
#   carry/dist/tuned-*.whl, carry/tests/tuned_gpu_tests and carry/bench/gemm_sweep (stripped);
#   STEPS="install gtest sweep bench py" (default: all but sweep; GTEST: a gtest filter; *_LIMIT:
#   seconds for gtest, the sweep, the bench and the Python tests; SWEEP_ARGS: more gemm_sweep
#   options, e.g. --candidates FILE; SWEEP_NAME: a suffix of the sweep's file name)
# Logs under $OUT; a short table last.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/lease.sh
STEPS=${STEPS:-install gtest bench py}
python=${PYTHON:-/opt/torch/.venv/bin/python3}
env=/tmp/tuned-env
step() { [[ " $STEPS " == *" $1 "* ]]; }

# The machine's torch, seen from a fresh venv (its site-packages by a .pth: the torch there lives
# in a venv itself, which --system-site-packages does not reach).
pip=("$env/bin/pip")
if [ ! -x "$env/bin/python" ]; then
  # (where the interpreter has no ensurepip, the machine's pip installs into the new venv)
  "$python" -m venv "$env" 2>"$out/venv.log" || {
    rm -rf "$env"; "$python" -m venv --without-pip "$env"; }
  site=$("$python" -c 'import site; print(site.getsitepackages()[0])')
  echo "$site" >"$("$env/bin/python" -c 'import site; print(site.getsitepackages()[0])')/torch-here.pth"
fi
if step install; then
  wheel=$(echo carry/dist/tuned-*.whl)
  start=$EPOCHREALTIME
  [ -x "$env/bin/pip" ] || pip=("$python" -m pip --python "$env/bin/python")
  "${pip[@]}" install --no-index --no-deps --quiet --force-reinstall "$wheel" >"$out/install.log" 2>&1
  rc=$?
  took=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
  summary+=("install  rc=$rc  $(basename "$wheel") ($(du -m "$wheel" | cut -f1) MB) in ${took} s")
  # import tuned and a first product, from outside the tree, in a fresh process
  start=$EPOCHREALTIME
  (cd /tmp && "$env/bin/python" -c '
import torch, tuned
a = torch.randn(1000, 127, device="cuda"); b = torch.randn(127, 7, device="cuda")
c = tuned.gemm(a, b); torch.cuda.synchronize()
e = ((c.double() - a.double() @ b.double()).norm() / (a.double() @ b.double()).norm()).item()
print("product error", e, "from", tuned.__file__); assert e < 1e-5') >"$out/first_product.log" 2>&1
  rc=$?
  took=$(awk -v s="$start" -v e="$EPOCHREALTIME" 'BEGIN { printf "%.1f", e - s }')
  summary+=("import + first product rc=$rc in ${took} s: $(head -c 120 "$out/first_product.log")")
fi
package=$("$env/bin/python" -c 'import os, tuned; print(os.path.dirname(tuned.__file__))' 2>/dev/null)
ldd "$package"/lib/libtuned.so* >"$out/ldd.log" 2>&1
summary+=("libtuned's libraries not found here: $(grep -c 'not found' "$out/ldd.log")")
# The test binary alone may need libgomp where the machine lacks it (carry/sys, last in the path).
if step gtest; then
  LD_LIBRARY_PATH="$package/lib:$PWD/carry/sys" timeout ${GTEST_LIMIT:-120} carry/tests/tuned_gpu_tests \
    --gtest_filter="${GTEST:-GemmBatchGpu.*}" >"$out/gtest.log" 2>&1
  rc=$?
  passed=$(grep -c '^\[       OK \]' "$out/gtest.log")
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z]*\.' "$out/gtest.log")
  summary+=("gtest rc=$rc: $passed passed, $failed failed lines")
  grep '^\[  FAILED  \]' "$out/gtest.log" | head -8
fi
# The selection model's data for batches: the portfolio on attention's batched products
# (gemm_sweep --attention), for cache/shipped (fit_selection --append-to).
if step sweep; then
  LD_LIBRARY_PATH="$package/lib:$PWD/carry/sys" timeout $((${SWEEP_LIMIT:-300} + 30)) \
    carry/bench/gemm_sweep --attention --portfolio ${SWEEP_ARGS:-} --max-seconds ${SWEEP_LIMIT:-300} \
    --out "$out/gemm_sweep_${tag}_attention${SWEEP_NAME:-}.tsv" >"$out/sweep.log" 2>&1
  rc=$?
  summary+=("sweep rc=$rc: $(tail -n 1 "$out/sweep.log")")
  gzip -k "$out/gemm_sweep_${tag}_attention${SWEEP_NAME:-}.tsv"
fi
if step bench; then
  (cd /tmp && PYTHONUNBUFFERED=1 timeout ${BENCH_LIMIT:-300} "$env/bin/python" "$OLDPWD/python/bench/torch_bench.py" \
    --out "$out/python_$tag.json" ${BENCH_ARGS:-}) 2>&1 | tee "$out/torch_bench.log" | tail -n 40
  summary+=("bench rc=${PIPESTATUS[0]}: $out/python_$tag.json")
fi
if step py; then
  (cd /tmp && TUNED_TEST_INSTALLED=1 PYTHONUNBUFFERED=1 timeout ${PY_LIMIT:-150} "$env/bin/python" -m unittest \
    discover -s "$OLDPWD/python/gpu_tests" -v ${PYTESTS:-}) >"$out/python_gpu.log" 2>&1
  rc=$?
  summary+=("python gpu tests rc=$rc: $(grep -E '^(Ran|OK|FAILED)' "$out/python_gpu.log" | tr '\n' ' ')")
  grep -E '^(FAIL|ERROR):' "$out/python_gpu.log" | head -12
fi
print_summary
