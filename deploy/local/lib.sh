# Shared by run.sh and bench.sh: bring up services, a database, the binaries.
# shellcheck shell=bash

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DATA_DIR=${DATA_DIR:-$ROOT/.data}
# Where the binaries are (make build puts them in bin/; a test may build elsewhere).
BIN=${BIN:-$ROOT/bin}
mkdir -p "$DATA_DIR/logs"
pids=()

# use_database NAME [fresh]: reuse DATABASE_URL/REDIS_URL if they answer, else
# start private servers; point DATABASE_URL at database NAME (recreated when
# fresh is given) unless the caller chose DATABASE_URL explicitly.
use_database() {
  local name=$1 fresh=${2:-} user_db=${DATABASE_URL:-}
  eval "$("$ROOT/deploy/local/services.sh" up)"
  if [ -z "$user_db" ]; then
    if [ -n "$fresh" ]; then psql "$DATABASE_URL" -qc "DROP DATABASE IF EXISTS $name WITH (FORCE)" >/dev/null; fi
    psql "$DATABASE_URL" -Atqc "SELECT 1 FROM pg_database WHERE datname = '$name'" | grep -q 1 \
      || psql "$DATABASE_URL" -qc "CREATE DATABASE $name" >/dev/null
    DATABASE_URL=$(echo "$DATABASE_URL" | sed -E "s#/[^/?]*(\?|\$)#/$name\1#")
  fi
  export DATABASE_URL REDIS_URL
  "$BIN/importctl" migrate >/dev/null
}

# start NAME: run bin/NAME in the background, logging under $DATA_DIR/logs.
# (The worker lowers its own CPU priority: BATCH_NICE, default 10.)
start() {
  "$BIN/$1" >>"$DATA_DIR/logs/$1.log" 2>&1 &
  pids+=($!)
}

# wait_ready URL: wait up to 10 s for a readiness probe.
wait_ready() {
  for _ in $(seq 100); do
    curl -fsS "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "$1 did not become ready; see $DATA_DIR/logs" >&2
  return 1
}

# stop_all: stop what start() started and the private servers.
stop_all() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$ROOT/deploy/local/services.sh" down || true
}
