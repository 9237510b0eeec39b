# Two commands do all set-up: `make run` and `make test`.
SHELL := /usr/bin/env bash
GO    ?= go
PKGS  := ./...
# Bounded fuzzing in `make test`; longer runs: make fuzz FUZZTIME=5m
FUZZTIME ?= 10s

.PHONY: build run test test-go bench fuzz lint fmt services-up services-down clean

build:
	$(GO) build -o bin/ ./cmd/...

## run: bring up Postgres, Redis, api and one worker with demo data; Ctrl-C stops it all
run: build
	@deploy/local/run.sh

## test: every test against real Postgres and Redis (started privately when none answers)
test:
	@set -euo pipefail; eval "$$(deploy/local/services.sh up)"; \
	  export TEST_DATABASE_URL="$$DATABASE_URL"; \
	  $(MAKE) --no-print-directory test-go

test-go: lint
	$(GO) test -count=1 -timeout 12m $(PKGS)

## bench: load generator against a fresh stack, pgbench ceiling, report in results/
bench: build
	@deploy/local/bench.sh

## fuzz: run each fuzz target for FUZZTIME
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeValidateAccount -fuzztime $(FUZZTIME) ./pkg/dataimport/

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	$(GO) vet $(PKGS)
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 $(PKGS)

fmt:
	gofmt -w $$(git ls-files '*.go')

services-up:
	@deploy/local/services.sh up

services-down:
	@deploy/local/services.sh down

clean:
	rm -rf bin
