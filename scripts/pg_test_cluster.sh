#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the store's tests (Debian's postgresql package: initdb and
# pg_ctl under /usr/lib/postgresql/<version>/bin), listening on a Unix socket in DIR only:
#   scripts/pg_test_cluster.sh start DIR [PORT]   prints the connection string for TUNED_TEST_STORE
#   scripts/pg_test_cluster.sh restart DIR        (the fleet test restarts the store mid-run)
#   scripts/pg_test_cluster.sh stop DIR
# PostgreSQL refuses to run as root: as root, the cluster runs as the package's postgres user.
# PG_BIN overrides where initdb and pg_ctl are found.
set -euo pipefail
command=${1:?start, restart or stop}
dir=${2:?a folder for the cluster}
port=${3:-54329}
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ ! -x "$bin/pg_ctl" ]; then
  echo "pg_test_cluster: no PostgreSQL server found (install Debian's postgresql, or set PG_BIN)" >&2
  exit 1
fi
as_owner=()
if [ "$(id -u)" -eq 0 ]; then
  id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
  # (the carried server's libraries travel in LD_LIBRARY_PATH: passed on explicitly)
  as_owner=(runuser -u postgres -- env "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}")
fi
data=$dir/data
case $command in
  start)
    mkdir -p "$dir"
    [ ${#as_owner[@]} -eq 0 ] || chown postgres "$dir"
    if [ ! -f "$data/PG_VERSION" ]; then
      "${as_owner[@]}" "$bin/initdb" -D "$data" -U postgres -A trust --no-sync -E UTF8 \
        >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    fi
    "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 \
      -o "-c listen_addresses='' -k $dir -p $port -c fsync=off -c max_connections=200" start \
      >/dev/null || { cat "$dir/server.log" >&2; exit 1; }
    echo "host=$dir port=$port user=postgres dbname=postgres"
    ;;
  restart)
    "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 -m fast restart \
      >/dev/null
    ;;
  stop)
    [ -f "$data/postmaster.pid" ] && "${as_owner[@]}" "$bin/pg_ctl" -D "$data" -w -m fast stop \
      >/dev/null || true
    ;;
  *)
    echo "pg_test_cluster: unknown command $command (start, restart or stop)" >&2
    exit 2
    ;;
esac
