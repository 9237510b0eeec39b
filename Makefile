# Two commands do all set-up: `make run` and `make test`.
SHELL := /usr/bin/env bash
GO    ?= go
PKGS  := ./...
# Bounded fuzzing in `make test`, by count: a duration-based -fuzztime can
# fail spuriously at its deadline on Go 1.26 (golang/go#75804).
# Longer runs: make fuzz FUZZTIME=2000000x
FUZZTIME ?= 40000x
# Count of the HTTP fuzz target (a real request per input, so its own count).
FUZZTIME_HTTP ?= 2000x
# Count of the CSV mapping fuzz target (a YAML mapping and three files per input).
FUZZTIME_CONVERT ?= 10000x
# Count of the old-vs-new decoder fuzz target (each input is decoded about
# twelve times: old and new code, as a whole body and placed in an account).
FUZZTIME_DIFF ?= 10000x
# make soak: each fault/overload test SOAK_COUNT times, then fuzzing this long.
SOAK_COUNT ?= 5
SOAK_FUZZTIME ?= 500000x
SOAK_FUZZTIME_HTTP ?= 50000x
SOAK_TESTS := TestPostgresRestartMidBatch|TestRedisRestartMidBatch|TestRedisFlushallMidBatch|TestWorkerSIGKILLMidBatch|TestAPIKilledWithCreatesWaiting|TestConcurrencyLimit

.PHONY: build run test test-go test-packages test-app test-others test-others-then-fuzz soak bench bench-scale bench-console bench-failures fuzz fuzz-ci lint lint-openapi sdk fmt services-up services-down clean

build:
	$(GO) build -o bin/ ./cmd/...

## run: bring up Postgres, Redis, api and one worker with demo data; Ctrl-C stops it all
run: build
	@deploy/local/run.sh

## test: every test against real Postgres and Redis (started privately when none answers)
# The linters run beside the package tests (-j): the tests mostly wait on
# Postgres, Redis and processes, so the lint's CPU costs them little, and
# the whole run is shorter by the lint's minutes. pkg/app, the longest
# package by far, starts at once beside the others (go test would start it
# only after the packages listed before it), and the fuzz targets run
# once the other packages are done, while pkg/app still runs.
test:
	@set -euo pipefail; eval "$$(deploy/local/services.sh up)"; \
	  export TEST_DATABASE_URL="$$DATABASE_URL" DATAIMPORT_TEST_SUMMARY="$$(mktemp)"; \
	  $(MAKE) --no-print-directory -j4 --output-sync=target lint lint-openapi test-app test-others-then-fuzz; \
	  deploy/local/summary.sh "$$DATAIMPORT_TEST_SUMMARY"

## soak: the fault and overload tests SOAK_COUNT times each, then long fuzzing; same summary as test
soak:
	@set -euo pipefail; eval "$$(deploy/local/services.sh up)"; \
	  export TEST_DATABASE_URL="$$DATABASE_URL" DATAIMPORT_TEST_SUMMARY="$$(mktemp)"; \
	  $(GO) test -count=$(SOAK_COUNT) -timeout $$(( $(SOAK_COUNT) * 10 + 5 ))m -run '^($(SOAK_TESTS))$$' ./pkg/app; \
	  $(MAKE) --no-print-directory fuzz FUZZTIME=$(SOAK_FUZZTIME) FUZZTIME_HTTP=$(SOAK_FUZZTIME_HTTP); \
	  deploy/local/summary.sh "$$DATAIMPORT_TEST_SUMMARY"

# sdk/go is a module of its own (what partners `go get`): ./... of the root
# module does not reach it, so its unit tests, vet and staticcheck run there.
test-go: lint lint-openapi test-packages

test-packages: test-app test-others

# The timeout leaves room on a slower machine: pkg/app alone runs about 7
# minutes here.
test-app:
	$(GO) test -count=1 -timeout 25m ./pkg/app

test-others:
	$(GO) test -count=1 -timeout 25m $$($(GO) list $(PKGS) | grep -v '/pkg/app$$')
	cd sdk/go && $(GO) test -count=1 ./...

test-others-then-fuzz: test-others
	@$(MAKE) --no-print-directory fuzz-ci

## lint-openapi: Redocly's recommended rules on the served OpenAPI document (redocly.yaml)
lint-openapi:
	@bin="$$(deploy/local/node-tools.sh)"; REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true "$$bin/redocly" lint pkg/httpapi/openapi/openapi.json --format=stylish 2>&1 | grep -v '[║╔╚]' | sed '/^\s*$$/d'; exit $${PIPESTATUS[0]}

## sdk: regenerate the Go and TypeScript SDKs from the OpenAPI document (sdk/)
sdk:
	@deploy/local/sdk.sh

## bench: load generator against a fresh stack, pgbench ceiling, report in results/
bench: build
	@deploy/local/bench.sh

## bench-scale: BENCH_ACCOUNTS (default 1,500,000) accounts through one bulk job on a fresh database, pgbench ceiling, report in results/scale.md (not part of make test)
bench-scale: build
	@deploy/local/bench-scale.sh

## bench-failures: the partner failures summary over 30,000 failure records among BENCH_FAILURES_ACCOUNTS (default 1,500,000) accounts (goal < 100 ms)
BENCH_FAILURES_ACCOUNTS ?= 1500000
bench-failures:
	@set -euo pipefail; eval "$$(deploy/local/services.sh up)"; \
	  export TEST_DATABASE_URL="$$DATABASE_URL" BENCH_FAILURES_ACCOUNTS=$(BENCH_FAILURES_ACCOUNTS); \
	  $(GO) test -run '^$$' -bench '^BenchmarkFailureSummary$$' -benchtime 20x -timeout 20m -v ./pkg/postgres/

## bench-console: the console's overview rendered with CONSOLE_BENCH_PROCESSES (default 1,000,000) import processes, and its Failures view with 30,000 failure records among CONSOLE_BENCH_FAILURE_PROCESSES (default 1,500,000) (goal < 300 ms a page)
CONSOLE_BENCH_PROCESSES ?= 1000000
CONSOLE_BENCH_FAILURE_PROCESSES ?= 1500000
bench-console:
	@set -euo pipefail; eval "$$(deploy/local/services.sh up)"; \
	  export TEST_DATABASE_URL="$$DATABASE_URL"; \
	  CONSOLE_BENCH_PROCESSES=$(CONSOLE_BENCH_PROCESSES) $(GO) test -run '^$$' -bench '^BenchmarkOverview$$' -benchtime 20x -timeout 20m -v ./pkg/console/; \
	  CONSOLE_BENCH_PROCESSES=$(CONSOLE_BENCH_FAILURE_PROCESSES) $(GO) test -run '^$$' -bench '^BenchmarkFailuresView$$' -benchtime 20x -timeout 20m -v ./pkg/console/

# package:target[:count] of every fuzz target; each runs its count, else FUZZTIME, in make test.
FUZZ_TARGETS := ./pkg/dataimport:FuzzDecodeValidateAccount ./pkg/dataimport:FuzzDecodeOldVsNew:$(FUZZTIME_DIFF) ./pkg/dataimport:FuzzCheckJSON:$(FUZZTIME_DIFF) ./pkg/dataimport:FuzzTransactions ./pkg/dataimport:FuzzNotes ./pkg/dataimport:FuzzStatements ./pkg/dataimport:FuzzPaymentInstruction ./pkg/dataimport:FuzzDocumentPath ./pkg/httpapi:FuzzObtainToken:$(FUZZTIME_HTTP) ./pkg/httpapi:FuzzRouter:$(FUZZTIME_HTTP) ./pkg/httpapi:FuzzAccountURLs:$(FUZZTIME_HTTP) ./pkg/csvconvert:FuzzConvert:$(FUZZTIME_CONVERT) ./pkg/storable:FuzzText

## fuzz: run each fuzz target for its count (make fuzz FUZZTIME=2000000x FUZZTIME_HTTP=50000x)
fuzz fuzz-ci:
	@set -euo pipefail; \
	if [ -z "$${TEST_DATABASE_URL:-}" ]; then eval "$$(deploy/local/services.sh up)"; export TEST_DATABASE_URL="$$DATABASE_URL"; fi; \
	for t in $(FUZZ_TARGETS); do IFS=: read -r pkg fn count <<< "$$t"; count=$${count:-$(FUZZTIME)}; \
	  out=$$($(GO) test -run '^$$' -fuzz "^$$fn\$$" -fuzztime $$count $$pkg 2>&1) || { echo "$$out"; exit 1; }; \
	  n=$$(echo "$$out" | sed -n 's/.*execs: \([0-9]*\).*/\1/p' | tail -1); \
	  echo "fuzz $$fn: $${n:-0} inputs, no failure"; \
	  if [ -n "$${DATAIMPORT_TEST_SUMMARY:-}" ]; then printf 'bad inputs tried\t%s\n' "$${n:-0}" >> "$$DATAIMPORT_TEST_SUMMARY"; fi; \
	done

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	cd sdk/go && $(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)
	cd sdk/go && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

services-up:
	@deploy/local/services.sh up

services-down:
	@deploy/local/services.sh down

clean:
	rm -rf bin
