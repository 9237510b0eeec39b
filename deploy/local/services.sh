#!/usr/bin/env bash
# Makes sure a Postgres and a Redis answer, for `make run` and `make test`.
#
#   deploy/local/services.sh up     -> prints `export DATABASE_URL=… REDIS_URL=…` lines
#   deploy/local/services.sh down   -> stops the private instances this script started
#
# It uses DATABASE_URL / REDIS_URL when they answer. Otherwise it starts
# private instances under $DATA_DIR (default .data/ in the repo, or
# /var/tmp/dataimport-<hash of the repo path> when the postgres user cannot
# reach the repo) on their own ports, installing Debian's packages first when
# the binaries are missing.
# Diagnostics go to stderr so that stdout can be eval'ed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)

# default_data_dir: .data/ in the repo, unless the servers run as another
# user (postgres, when this runs as root) who cannot traverse the repo's
# path (a clone in /root, or in a `mktemp -d` folder, mode 700): pg_ctl
# could not reach its data there. Then a folder of that user's, named after
# the repo path so that clones do not share one.
default_data_dir() {
  if [ "$(id -u)" -ne 0 ] || runuser -u postgres -- test -x "$ROOT" 2>/dev/null; then
    echo "$ROOT/.data"
    return
  fi
  echo "/var/tmp/dataimport-$(printf '%s' "$ROOT" | sha256sum | cut -c1-16)"
}
DATA_DIR=${DATA_DIR:-$(default_data_dir)}
PG_PORT=${PRIVATE_PG_PORT:-55432}
REDIS_PORT=${PRIVATE_REDIS_PORT:-56379}
DEFAULT_DB_URL="postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"
DEFAULT_REDIS_URL="redis://127.0.0.1:6379/0"

log() { echo "services: $*" >&2; }

apt_install() {
  log "installing Debian packages: $*"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}

pg_bin() {
  # Debian keeps the server binaries off PATH.
  local name=$1 dir
  if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return; fi
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/$name" ] && { echo "$dir/$name"; return; }
  done
  return 1
}

# port_taken PORT: something listens on 127.0.0.1:PORT.
port_taken() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pg_answers() { command -v psql >/dev/null 2>&1 && PGCONNECT_TIMEOUT=5 psql "$1" -Atqc 'select 1' >/dev/null 2>&1; }
redis_answers() { command -v redis-cli >/dev/null 2>&1 && [ "$(timeout 5 redis-cli -u "$1" ping 2>/dev/null)" = "PONG" ]; }

# as_pg runs a Postgres server binary; the server refuses to run as root.
# From /, when the working directory is out of the postgres user's reach
# (the paths it is given are absolute).
as_pg() {
  if [ "$(id -u)" -ne 0 ]; then "$@"; return; fi
  if runuser -u postgres -- test -x "$PWD" 2>/dev/null; then runuser -u postgres -- "$@"; else (cd / && runuser -u postgres -- "$@"); fi
}

ensure_postgres() {
  local url=${DATABASE_URL:-$DEFAULT_DB_URL}
  command -v psql >/dev/null 2>&1 || apt_install postgresql-client
  if pg_answers "$url"; then echo "$url"; return; fi
  local private="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
  if pg_answers "$private"; then echo "$private"; return; fi
  # The port is held by something that is not a Postgres we can use (a
  # server still shutting down, say): take the next free one.
  while port_taken "$PG_PORT"; do PG_PORT=$((PG_PORT + 1)); done
  private="postgres://postgres@127.0.0.1:$PG_PORT/postgres?sslmode=disable"
  pg_bin initdb >/dev/null || apt_install postgresql
  local initdb pgctl
  initdb=$(pg_bin initdb); pgctl=$(pg_bin pg_ctl)
  mkdir -p "$DATA_DIR"
  if [ "$(id -u)" -eq 0 ]; then
    chown postgres "$DATA_DIR"
    # In the repo, others may read the logs; outside it, the folder is the
    # postgres user's alone (root, running Redis, passes anyway).
    case "$DATA_DIR" in "$ROOT"/*) chmod 755 "$DATA_DIR" ;; *) chmod 700 "$DATA_DIR" ;; esac
  fi
  if [ "$(id -u)" -eq 0 ] && ! runuser -u postgres -- test -w "$DATA_DIR"; then
    log "the postgres user cannot write $DATA_DIR (set DATA_DIR to a folder it can reach)"; exit 1
  fi
  if [ ! -f "$DATA_DIR/pg/PG_VERSION" ]; then
    log "initialising private Postgres in $DATA_DIR/pg"
    as_pg "$initdb" -D "$DATA_DIR/pg" -U postgres --auth=trust -E UTF8 >/dev/null
  fi
  log "starting private Postgres on 127.0.0.1:$PG_PORT"
  as_pg "$pgctl" -D "$DATA_DIR/pg" -l "$DATA_DIR/pg.log" -w -t 60 \
    -o "-p $PG_PORT -k $DATA_DIR/pg -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=${PG_FSYNC:-on}" start >&2
  pg_answers "$private" || { log "private Postgres did not come up; see $DATA_DIR/pg.log"; exit 1; }
  echo "$private"
}

ensure_redis() {
  local url=${REDIS_URL:-$DEFAULT_REDIS_URL}
  command -v redis-server >/dev/null 2>&1 || apt_install redis-server redis-tools
  if redis_answers "$url"; then echo "$url"; return; fi
  local private="redis://127.0.0.1:$REDIS_PORT/0"
  if redis_answers "$private"; then echo "$private"; return; fi
  while port_taken "$REDIS_PORT"; do REDIS_PORT=$((REDIS_PORT + 1)); done
  private="redis://127.0.0.1:$REDIS_PORT/0"
  mkdir -p "$DATA_DIR/redis"
  log "starting private Redis on 127.0.0.1:$REDIS_PORT"
  redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --dir "$DATA_DIR/redis" \
    --appendonly yes --pidfile "$DATA_DIR/redis.pid" --logfile "$DATA_DIR/redis.log" >&2
  for _ in $(seq 50); do redis_answers "$private" && break; sleep 0.1; done
  redis_answers "$private" || { log "private Redis did not come up; see $DATA_DIR/redis.log"; exit 1; }
  echo "$private"
}

case "${1:-up}" in
  up)
    # Fault tests run their own throw-away Postgres server: make sure the
    # server binaries are here even when an existing server answers.
    pg_bin initdb >/dev/null || apt_install postgresql
    db=$(ensure_postgres)
    rd=$(ensure_redis)
    echo "export DATABASE_URL='$db'"
    echo "export REDIS_URL='$rd'"
    ;;
  down)
    if [ -f "$DATA_DIR/pg/postmaster.pid" ]; then as_pg "$(pg_bin pg_ctl)" -D "$DATA_DIR/pg" -m fast stop >&2 || true; fi
    if [ -f "$DATA_DIR/redis.pid" ]; then
      # Redis can refuse a SIGTERM (a shutdown save that fails leaves it
      # running): wait for it to go, then end it for good.
      pid=$(cat "$DATA_DIR/redis.pid")
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then log "private Redis ($pid) did not stop; killing it"; kill -9 "$pid" 2>/dev/null || true; fi
    fi
    ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
