#!/usr/bin/env bash
# `make run`: everything a newcomer needs on one machine. Starts (or reuses)
# Postgres and Redis, migrates, starts api + one worker, creates demo data and
# prints a working curl walk-through. Ctrl-C stops everything it started.
set -euo pipefail
# shellcheck source=deploy/local/lib.sh
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

use_database dataimport
export HTTP_ADDR=${HTTP_ADDR:-127.0.0.1:8080}
export WORKER_HTTP_ADDR=${WORKER_HTTP_ADDR:-127.0.0.1:8081}
# The operator console, on its own port; plain http on this machine.
export CONSOLE_ADDR=${CONSOLE_ADDR:-127.0.0.1:8082}
export CONSOLE_COOKIE_SECURE=${CONSOLE_COOKIE_SECURE:-false}
# A partner trying webhooks on this machine points them at a local receiver:
# allow loopback and plain http here (never in production).
export WEBHOOK_ALLOW_PRIVATE=${WEBHOOK_ALLOW_PRIVATE:-true}
BASE="http://$HTTP_ADDR"

trap 'echo; echo "stopping api and worker…"; stop_all; echo "stopped."' INT TERM EXIT
# Payment vendor: without a Stripe key of your own, a local stripe-mock (a Go
# tool of this module) stands in, so the demo account's payment instruction
# is verified like a real one. Both the api and the worker verify.
if [ -z "${STRIPE_API_KEY:-}" ]; then
  STRIPE_MOCK_ADDR=${STRIPE_MOCK_ADDR:-127.0.0.1:12111}
  go build -o "$BIN/stripe-mock" github.com/stripe/stripe-mock
  "$BIN/stripe-mock" -http-addr "$STRIPE_MOCK_ADDR" -https-addr "${STRIPE_MOCK_HTTPS_ADDR:-127.0.0.1:12112}" \
    >>"$DATA_DIR/logs/stripe-mock.log" 2>&1 &
  pids+=($!)
  export STRIPE_API_KEY=sk_test_demo STRIPE_API_URL="http://$STRIPE_MOCK_ADDR"
  for _ in $(seq 300); do curl -s "$STRIPE_API_URL" >/dev/null 2>&1 && break; sleep 0.1; done
fi
start worker
start api
wait_ready "$BASE/readyz"
# The worker answers /healthz once it serves; a worker that could not start
# is reported here, not after the walk-through has begun.
wait_ready "http://$WORKER_HTTP_ADDR/healthz"

# Demo data: idempotent, so `make run` can be run again on the same data.
"$BIN/importctl" supplier create DEMO_ENERGY --root demo-energy --market GB --require-products >/dev/null 2>&1 || true
"$BIN/importctl" supplier update DEMO_ENERGY --market GB --require-products >/dev/null
"$BIN/importctl" products load deploy/local/demo_products.json >/dev/null
"$BIN/importctl" team create Migrations >/dev/null 2>&1 || true
"$BIN/importctl" org create "Demo Partner" >/dev/null 2>&1 || true
KEY=$("$BIN/importctl" apikey create --org "Demo Partner" --supplier DEMO_ENERGY --json | sed -n 's/.*"api_key": "\([^"]*\)".*/\1/p')
# A demo operator for the console: a new one-time password on every run.
OPERATOR_PW=$( { "$BIN/importctl" operator create demo --json 2>/dev/null || "$BIN/importctl" operator reset-password demo --json; } \
  | sed -n 's/.*"one_time_password": "\([^"]*\)".*/\1/p')

cat <<TXT

  Data-import service is up.
    API      $BASE          (logs: $DATA_DIR/logs/api.log)
    console  http://$CONSOLE_ADDR   operator "demo", one-time password: $OPERATOR_PW
             (you choose your own at the first login)
    worker   http://$WORKER_HTTP_ADDR  (logs: $DATA_DIR/logs/worker.log)
    Postgres $DATABASE_URL
    Redis    $REDIS_URL
    Stripe   $STRIPE_API_URL  (payment vendor STRIPE; stripe-mock unless you set STRIPE_API_KEY)

  Demo supplier DEMO_ENERGY (market GB, agreements must name catalogue products), team Migrations,
  organisation "Demo Partner"; product catalogue from deploy/local/demo_products.json.
  API key (shown once): $KEY

  Walk-through: README.md's "Walk-through" blocks, pasted in order into a shell after
    KEY=$KEY BASE=$BASE
  Webhooks may target loopback/plain http here (WEBHOOK_ALLOW_PRIVATE=$WEBHOOK_ALLOW_PRIVATE).

  Operator commands: $BIN/importctl --help   (same DATABASE_URL as above)
  Ctrl-C stops everything this command started.

TXT
wait -n "${pids[@]}" || true
echo "a process exited; see $DATA_DIR/logs" >&2
