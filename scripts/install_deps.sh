#!/usr/bin/env bash
# Installs what tuned builds with on Debian/Ubuntu (the CUDA toolkit itself must already be there:
# nvcc, NVRTC and cuBLAS under /usr/local/cuda or on the PATH).
set -euo pipefail
need=()
for pkg in cmake g++ make pkg-config python3 python3-dev python3-venv python3-setuptools python3-wheel \
    libsqlite3-dev zlib1g-dev libzstd-dev libpq-dev libtomlplusplus-dev libcli11-dev libgtest-dev \
    python3-torch postgresql chromium; do
  # (torch: the routing tests of the Python package run on its CPU tensors; postgresql: the tuning
  # store's tests run a throwaway server, scripts/pg_test_cluster.sh; chromium: the report is
  # checked in a headless browser, tests/report/report_browser_test.py)
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -q "${need[@]}"
fi
if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
  echo "tuned needs the CUDA toolkit (nvcc, NVRTC, cuBLAS): none found on PATH or in /usr/local/cuda" >&2
  exit 1
fi
