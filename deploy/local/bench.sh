#!/usr/bin/env bash
# `make bench`: a fresh stack on a fresh database, the load generator driving
# it as partners would, pgbench's ceiling for the same writes, and a report
# under results/ (latest.md, latest.png, latest.json).
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

ACCOUNTS=${BENCH_ACCOUNTS:-10000}
PARALLEL=${BENCH_PARALLEL:-32}
# The worker runs at its defaults (WORKER_CONCURRENCY: 2 per core); the
# report names the value in effect.
CONCURRENCY=${WORKER_CONCURRENCY:-$((2 * $(nproc)))}
export HTTP_ADDR=${BENCH_HTTP_ADDR:-127.0.0.1:18080}
export WORKER_HTTP_ADDR=${BENCH_WORKER_HTTP_ADDR:-127.0.0.1:18081}
# The webhook-lag phase's receiver listens on 127.0.0.1.
export WEBHOOK_ALLOW_PRIVATE=true
command -v pgbench >/dev/null || { echo "installing pgbench (postgresql-contrib)" >&2; apt-get update -qq && apt-get install -y -qq postgresql-contrib >/dev/null; }

use_database dataimport_bench fresh
trap 'stop_all' INT TERM EXIT
PPROF_ADDR=127.0.0.1:16061 start worker; worker_pid=${pids[-1]}
PPROF_ADDR=127.0.0.1:16060 start api; api_pid=${pids[-1]}
wait_ready "http://$HTTP_ADDR/readyz"

bin/importctl supplier create BENCH_ENERGY >/dev/null
bin/importctl supplier create BENCH_LIST >/dev/null
bin/importctl team create Migrations >/dev/null
bin/importctl org create "Bench Partner" >/dev/null
KEY=$(bin/importctl apikey create --org "Bench Partner" --supplier BENCH_ENERGY --supplier BENCH_LIST --json | sed -n 's/.*"api_key": "\([^"]*\)".*/\1/p')

# A CPU profile of each process while the load runs, for the report.
mkdir -p results
prof=()
(sleep 5; curl -s -o results/api.cpu.pprof "http://127.0.0.1:16060/debug/pprof/profile?seconds=10") & prof+=($!)
(sleep 5; curl -s -o results/worker.cpu.pprof "http://127.0.0.1:16061/debug/pprof/profile?seconds=10") & prof+=($!)

bin/loadgen --api "http://$HTTP_ADDR" --api-key "$KEY" --supplier BENCH_ENERGY --accounts "$ACCOUNTS" \
  --parallel "$PARALLEL" --api-pid "$api_pid" --worker-pid "$worker_pid" --worker-concurrency "$CONCURRENCY" \
  --database-url "$DATABASE_URL" --out results
wait "${prof[@]}" 2>/dev/null || true
# Webhook delivery lag, commit to receipt, at BENCH_WEBHOOK_RATE events/s
# open-loop; appended to results/latest.md.
bin/loadgen webhooks --database-url "$DATABASE_URL" --org "Bench Partner" --supplier BENCH_ENERGY \
  --rate "${BENCH_WEBHOOK_RATE:-200}" --seconds "${BENCH_WEBHOOK_SECONDS:-20}" --out results
for p in api worker; do
  [ -s results/$p.cpu.pprof ] && go tool pprof -top -nodecount=25 "bin/$p" results/$p.cpu.pprof > results/$p.cpu.top.txt 2>/dev/null || true
done
echo "report: results/latest.md (profiles: results/*.cpu.top.txt)"
