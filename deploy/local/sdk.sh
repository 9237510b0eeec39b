#!/usr/bin/env bash
# Generates the SDKs' generated layers from an OpenAPI document:
#   sdk/go/client/client.gen.go  oapi-codegen (pinned below), config sdk/go/oapi-codegen.yaml
#   sdk/ts/src/schema.ts         openapi-typescript (pinned in tools/node/package.json)
# Usage: deploy/local/sdk.sh [DOCUMENT [OUTDIR]]
#   DOCUMENT defaults to pkg/httpapi/openapi/openapi.json, the document the API
#   embeds and serves; OUTDIR defaults to the repository (make sdk). The SDK
#   test passes the served document and a temporary OUTDIR, then compares.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OAPI_CODEGEN=github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2
doc="$(realpath "${1:-$root/pkg/httpapi/openapi/openapi.json}")"
out="${2:-$root}"
mkdir -p "$out/sdk/go/client" "$out/sdk/ts/src"
out="$(realpath "$out")"
bin="$("$root/deploy/local/node-tools.sh")"
cd "$root"
# The config's output is relative to the repository; point it at OUTDIR.
cfg="$(mktemp)"
trap 'rm -f "$cfg"' EXIT
sed "s#^output: .*#output: $out/sdk/go/client/client.gen.go#" sdk/go/oapi-codegen.yaml > "$cfg"
go run "$OAPI_CODEGEN" -config "$cfg" "$doc"
# Defaults make no property required: the API applies them to what is not sent.
"$bin/openapi-typescript" "$doc" --default-non-nullable=false -o "$out/sdk/ts/src/schema.ts" >/dev/null 2>&1 \
  || "$bin/openapi-typescript" "$doc" --default-non-nullable=false -o "$out/sdk/ts/src/schema.ts"
