#!/usr/bin/env bash
# `make run`: everything a newcomer needs on one machine. Starts (or reuses)
# Postgres and Redis, migrates, starts api + one worker, creates demo data and
# prints a working curl walk-through. Ctrl-C stops everything it started.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
DATA_DIR=${DATA_DIR:-$ROOT/.data}
mkdir -p "$DATA_DIR/logs"

user_db=${DATABASE_URL:-}
eval "$(deploy/local/services.sh up)"
if [ -z "$user_db" ]; then
  # Our own database on whichever server answered, never the admin one.
  psql "$DATABASE_URL" -Atqc "SELECT 1 FROM pg_database WHERE datname = 'dataimport'" | grep -q 1 \
    || psql "$DATABASE_URL" -qc "CREATE DATABASE dataimport" >/dev/null
  DATABASE_URL=$(echo "$DATABASE_URL" | sed -E 's#/[^/?]*(\?|$)#/dataimport\1#')
fi
export DATABASE_URL REDIS_URL
export HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
export WORKER_HTTP_ADDR=${WORKER_HTTP_ADDR:-127.0.0.1:8081}
BASE="http://$HTTP_ADDR"

bin/importctl migrate >/dev/null

pids=()
stop() {
  trap - INT TERM EXIT
  echo; echo "stopping api and worker…"
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  deploy/local/services.sh down || true
  echo "stopped."
}
trap stop INT TERM EXIT

bin/worker >>"$DATA_DIR/logs/worker.log" 2>&1 & pids+=($!)
bin/api >>"$DATA_DIR/logs/api.log" 2>&1 & pids+=($!)
for _ in $(seq 100); do
  curl -fsS "$BASE/readyz" >/dev/null 2>&1 && break
  sleep 0.1
done
curl -fsS "$BASE/readyz" >/dev/null || { echo "api did not become ready; see $DATA_DIR/logs/api.log" >&2; exit 1; }

# Demo data: idempotent, so `make run` can be run again on the same data.
bin/importctl supplier create DEMO_ENERGY --root demo-energy >/dev/null 2>&1 || true
bin/importctl team create Migrations >/dev/null 2>&1 || true
bin/importctl org create "Demo Partner" >/dev/null 2>&1 || true
KEY=$(bin/importctl apikey create --org "Demo Partner" --supplier DEMO_ENERGY --json | sed -n 's/.*"api_key": "\([^"]*\)".*/\1/p')

cat <<TXT

  Data-import service is up.
    API      $BASE          (logs: $DATA_DIR/logs/api.log)
    worker   http://$WORKER_HTTP_ADDR  (logs: $DATA_DIR/logs/worker.log)
    Postgres $DATABASE_URL
    Redis    $REDIS_URL

  Demo supplier DEMO_ENERGY, team Migrations, organisation "Demo Partner".
  API key (shown once): $KEY

  Walk-through (copy-paste):

    export BASE=$BASE
    TOKEN=\$(curl -s -X POST \$BASE/v1/graphql/ -H 'Content-Type: application/json' \\
      -d '{"query":"mutation { obtainToken(input: {APIKey: \"$KEY\"}) { token } }"}' \\
      | sed -E 's/.*"token":"([^"]+)".*/\1/')
    curl -s \$BASE/v1/data-import/validate-account/ -H "Authorization: Token \$TOKEN" \\
      -H 'Content-Type: application/json' --data @pkg/dataimport/testdata/account_valid.json
    curl -s \$BASE/v1/data-import/account-import-process/create-or-update/ -H "Authorization: Token \$TOKEN" \\
      -H 'Content-Type: application/json' --data @pkg/dataimport/testdata/account_valid.json
    curl -s \$BASE/v1/data-import/account-transfer-status/DEMO_ENERGY/EXT-0001/ -H "Authorization: Token \$TOKEN"

  Operator commands: bin/importctl --help   (same DATABASE_URL as above)
  Ctrl-C stops everything this command started.

TXT
wait -n "${pids[@]}" || true
echo "a process exited; see $DATA_DIR/logs" >&2
