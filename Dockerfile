# syntax=docker/dockerfile:1.7
#
# One image, three binaries: api (default), worker, importctl.
#   docker build -t dataimport:local .
#   docker run dataimport:local                      # api on :8080
#   docker run dataimport:local worker               # worker, probes/metrics on :8081
#   docker run dataimport:local importctl migrate    # apply DB migrations (embedded in the binary)
# Configuration is environment only; see pkg/config/config.go and deploy/README.md.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
WORKDIR /src
# Dependencies first, so source edits do not re-download modules.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=bind,source=go.mod,target=go.mod \
    --mount=type=bind,source=go.sum,target=go.sum \
    --mount=type=bind,source=sdk/go/go.mod,target=sdk/go/go.mod \
    --mount=type=bind,source=sdk/go/go.sum,target=sdk/go/go.sum \
    go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -ldflags="-s -w" -o /out/ ./cmd/api ./cmd/worker ./cmd/importctl

# distroless/static: CA certificates and tzdata, no shell, runs as uid 65532.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/api /out/worker /out/importctl /usr/local/bin/
# The code defaults to 127.0.0.1, which is unreachable from outside a container.
ENV HTTP_ADDR=:8080 \
    WORKER_HTTP_ADDR=:8081
EXPOSE 8080 8081
USER nonroot:nonroot
# SIGTERM drains in-flight work (SHUTDOWN_TIMEOUT, default 30s); give the
# orchestrator's grace period at least that much.
STOPSIGNAL SIGTERM
CMD ["api"]
