#!/usr/bin/env bash
# `make bench-scale`: BENCH_ACCOUNTS (default 1,500,000) accounts through one
# bulk import job on a fresh database, then pgbench's per-account ceiling for
# the same writes, and the physical floor (the account tables dumped and timed
# restoring into an empty database, pg_dump/pg_restore of the server's major
# version); report in results/scale.md (+ scale.png, scale.json).
#
# The import's bookkeeping (every table but the account tables) is weighed
# against the account tables twice: when the jobs complete (row "bookkeeping
# KB ÷ account KB when the jobs complete, before compaction"), and once they
# are compacted (rows "compaction of the completed jobs ... / VACUUM FULL",
# "once compacted: account tables / bookkeeping per account", "bookkeeping
# KB ÷ account KB once the jobs are compacted, without dead rows (goal ≤
# 0.5)", and a per-table breakdown of that state). The worker keeps its
# JOB_COMPACT_AFTER (10 min by default, a retention choice): once the jobs
# have completed and the floor is measured, loadgen runs the worker's own
# compactor (jobs.JobCompactor) on them at once, then VACUUM FULL of every
# bookkeeping table, so that no dead row counts (the account tables are
# insert-only and not rewritten); the compaction's and the VACUUM FULL's
# seconds are reported (11 s and 1.4 s at 60,000 accounts, 61 s and 6.6 s at
# 300,000: both grow with the accounts).
# BENCH_COMPACTED=0 skips that second measure.
#
# For a profile of the run (results/profile.md):
#   BENCH_WORKER_PPROF / BENCH_API_PPROF=host:port serve each process's pprof;
#   BENCH_PROFILE_DIR=dir then keeps back-to-back 10-second CPU profiles of
#     both over the whole run there (api.cpu.NNN.pprof, worker.cpu.NNN.pprof:
#     `go tool pprof -top bin/api dir/api.cpu.*.pprof` merges them);
#   BENCH_PG_LOG=1 has Postgres log every statement of the API's and the
#     worker's connections with its duration, without its parameters (their
#     connections only, through the connection options: the server's other
#     users are untouched); the connections are named application_name=api /
#     worker either way;
#   BENCH_DATABASE names the database (default dataimport_bench_scale), so a
#     profile on a shared server does not drop someone else's run;
#   two runs at once on one machine also need their own ports and Redis
#     database: BENCH_HTTP_ADDR / BENCH_WORKER_HTTP_ADDR (default
#     127.0.0.1:18090 / :18091; the worker's serves its metrics) and
#     BENCH_REDIS_DB (the database number in REDIS_URL, default as given, 0:
#     the job queues live there, and one run's worker would take the other's
#     tasks);
#   BENCH_FLOOR=0 and BENCH_PGBENCH_SECONDS=0 skip the floor and the ceiling.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

ACCOUNTS=${BENCH_ACCOUNTS:-1500000}
export HTTP_ADDR=${BENCH_HTTP_ADDR:-127.0.0.1:18090}
export WORKER_HTTP_ADDR=${BENCH_WORKER_HTTP_ADDR:-127.0.0.1:18091}
command -v pgbench >/dev/null || { echo "installing pgbench (postgresql-contrib)" >&2; apt-get update -qq && apt-get install -y -qq postgresql-contrib >/dev/null; }

use_database "${BENCH_DATABASE:-dataimport_bench_scale}" fresh
if [ -n "${BENCH_REDIS_DB:-}" ]; then
  REDIS_URL=$(echo "$REDIS_URL" | sed -E "s#^(rediss?://[^/?]*)(/[0-9]*)?#\1/$BENCH_REDIS_DB#")
  export REDIS_URL
fi
# service_url APP: the services' DATABASE_URL, named, and logging each
# statement when BENCH_PG_LOG=1.
service_url() {
  local sep='?' url=$DATABASE_URL
  case $url in *\?*) sep='&' ;; esac
  url="$url${sep}application_name=$1"
  [ "${BENCH_PG_LOG:-0}" = 1 ] && url="$url&options=-c%20log_min_duration_statement%3D0%20-c%20log_parameter_max_length%3D0"
  echo "$url"
}
trap 'stop_all' INT TERM EXIT
DATABASE_URL=$(service_url worker) PPROF_ADDR=${BENCH_WORKER_PPROF:-} start worker; worker_pid=${pids[-1]}
DATABASE_URL=$(service_url api) PPROF_ADDR=${BENCH_API_PPROF:-} start api; api_pid=${pids[-1]}
wait_ready "http://$HTTP_ADDR/readyz"

bin/importctl supplier create BENCH_ENERGY >/dev/null
bin/importctl team create Migrations >/dev/null
bin/importctl org create "Bench Partner" >/dev/null
KEY=$(bin/importctl apikey create --org "Bench Partner" --supplier BENCH_ENERGY --json | sed -n 's/.*"api_key": "\([^"]*\)".*/\1/p')

bin/loadgen scale --api "http://$HTTP_ADDR" --api-key "$KEY" --supplier BENCH_ENERGY --accounts "$ACCOUNTS" \
  --status-rate "${BENCH_STATUS_RATE:-200}" --job-accounts "${BENCH_JOB_ACCOUNTS:-400000}" --api-pid "$api_pid" --worker-pid "$worker_pid" \
  --database-url "$DATABASE_URL" --pgbench-seconds "${BENCH_PGBENCH_SECONDS:-15}" --floor="$([ "${BENCH_FLOOR:-1}" = 0 ] && echo false || echo true)" \
  --compacted="$([ "${BENCH_COMPACTED:-1}" = 0 ] && echo false || echo true)" \
  --out results &
loadgen_pid=$!
prof=()
if [ -n "${BENCH_PROFILE_DIR:-}" ]; then
  mkdir -p "$BENCH_PROFILE_DIR"
  # Back-to-back profiles while loadgen runs; the last one ends up to 10 s
  # after it, so the run's end is covered.
  profile_loop() {
    local i=0
    while kill -0 "$loadgen_pid" 2>/dev/null; do
      curl -fsS -o "$BENCH_PROFILE_DIR/$1.cpu.$(printf %03d $i).pprof" "http://$2/debug/pprof/profile?seconds=10" || sleep 1
      i=$((i + 1))
    done
  }
  [ -n "${BENCH_API_PPROF:-}" ] && { profile_loop api "$BENCH_API_PPROF" & prof+=($!); }
  [ -n "${BENCH_WORKER_PPROF:-}" ] && { profile_loop worker "$BENCH_WORKER_PPROF" & prof+=($!); }
fi
wait "$loadgen_pid"
[ ${#prof[@]} -gt 0 ] && wait "${prof[@]}"
echo "report: results/scale.md"
