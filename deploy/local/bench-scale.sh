#!/usr/bin/env bash
# `make bench-scale`: BENCH_ACCOUNTS (default 1,500,000) accounts through one
# bulk import job on a fresh database, then pgbench's per-account ceiling for
# the same writes, and the physical floor (the account tables dumped and timed
# restoring into an empty database, pg_dump/pg_restore of the server's major
# version); report in results/scale.md (+ scale.png, scale.json).
# BENCH_WORKER_PPROF=host:port serves the worker's pprof during the run.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

ACCOUNTS=${BENCH_ACCOUNTS:-1500000}
export HTTP_ADDR=${BENCH_HTTP_ADDR:-127.0.0.1:18090}
export WORKER_HTTP_ADDR=${BENCH_WORKER_HTTP_ADDR:-127.0.0.1:18091}
command -v pgbench >/dev/null || { echo "installing pgbench (postgresql-contrib)" >&2; apt-get update -qq && apt-get install -y -qq postgresql-contrib >/dev/null; }

use_database dataimport_bench_scale fresh
trap 'stop_all' INT TERM EXIT
PPROF_ADDR=${BENCH_WORKER_PPROF:-} start worker; worker_pid=${pids[-1]}
start api; api_pid=${pids[-1]}
wait_ready "http://$HTTP_ADDR/readyz"

bin/importctl supplier create BENCH_ENERGY >/dev/null
bin/importctl team create Migrations >/dev/null
bin/importctl org create "Bench Partner" >/dev/null
KEY=$(bin/importctl apikey create --org "Bench Partner" --supplier BENCH_ENERGY --json | sed -n 's/.*"api_key": "\([^"]*\)".*/\1/p')

bin/loadgen scale --api "http://$HTTP_ADDR" --api-key "$KEY" --supplier BENCH_ENERGY --accounts "$ACCOUNTS" \
  --status-rate "${BENCH_STATUS_RATE:-200}" --job-accounts "${BENCH_JOB_ACCOUNTS:-400000}" --api-pid "$api_pid" --worker-pid "$worker_pid" \
  --database-url "$DATABASE_URL" --pgbench-seconds "${BENCH_PGBENCH_SECONDS:-15}" --out results
echo "report: results/scale.md"
