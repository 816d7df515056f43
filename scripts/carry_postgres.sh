#!/usr/bin/env bash
# Packs this machine's PostgreSQL server (Debian's postgresql: initdb, pg_ctl, postgres, psql, and
# the libraries they and libpq load) into carry/pg.tar.xz, for a GPU machine that has none
# (scripts/store_gpu_check.sh unpacks it). The tree keeps Debian's layout under usr/, so the server
# finds its share and lib folders relative to its binaries; the JIT's bitcode is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
version=$(basename "$(dirname "$bin")")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/usr/lib/postgresql" "$stage/usr/share/postgresql" "$stage/libs"
cp -a "/usr/lib/postgresql/$version" "$stage/usr/lib/postgresql/"
rm -rf "$stage/usr/lib/postgresql/$version/lib/bitcode" "$stage/usr/lib/postgresql/$version/lib/llvmjit"* \
  "$stage/usr/lib/postgresql/$version/lib/pgxs"
# The server, its cluster tools and psql; no other client program.
find "$stage/usr/lib/postgresql/$version/bin" -type f ! -name postgres ! -name initdb ! -name pg_ctl \
  ! -name psql -delete
cp -a "/usr/share/postgresql/$version" "$stage/usr/share/postgresql/"
libpq=$(ls /usr/lib/x86_64-linux-gnu/libpq.so.5)
for f in "$bin/postgres" "$bin/initdb" "$bin/pg_ctl" "$bin/psql" "$libpq"; do
  ldd "$f" | awk '/=>/ {print $3}'
done | sort -u | grep -v -e '/libc\.so' -e '/libm\.so' -e ld-linux -e libpthread -e '/libdl\.' \
  -e '/librt\.' -e libstdc++ -e libgcc_s | while read -r lib; do cp -L "$lib" "$stage/libs/"; done
cp -L "$libpq" "$stage/libs/"
mkdir -p carry
tar -C "$stage" -cf - . | xz -9e -T0 >carry/pg.tar.xz
echo "carry/pg.tar.xz: PostgreSQL $version, $(du -h carry/pg.tar.xz | cut -f1)"
