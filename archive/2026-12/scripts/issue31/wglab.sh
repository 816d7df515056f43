#!/usr/bin/env bash
# Builds scripts/issue31/wglab.cu for each variant line of a file ("name -DX=1 -DY=2 ...",
# layouts from -DTRANS_A/-DTRANS_B) into carry/lab/NAME, in parallel.
#   wglab.sh VARIANTS_FILE
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p carry/lab
base="-DGEMV=0 -DGCOLS=1 -DKERNEL_NAME=lab_kernel -DKSUM_CHAIN=96 -DTM=2 -DTN=2 -DLM=8
 -DPAD=0 -DAKM=1 -DBKM=0 -DUNROLL=8 -DPRETB=0 -DSPLITK=1 -DTAIL=0 -DCSTAGE=0 -DKSUM=1
 -DA_STRIDE=136 -DB_STRIDE=36 -DC_STRIDE=132"
while read -r name defs; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  ( nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -Xptxas -v $base $defs -DVARIANT_NAME="\"$name\"" \
      scripts/issue31/wglab.cu -o "carry/lab/$name" -lcublas -lcuda > "carry/lab/$name.log" 2>&1 \
    && grep -E "Used [0-9]+ registers|spill" "carry/lab/$name.log" | grep -A1 -B0 "lab_kernel" -m2 \
       | tr '\n' ' ' | sed "s/^/$name: /"; echo ) &
done < "$1"
wait
