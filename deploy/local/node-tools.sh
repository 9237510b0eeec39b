#!/usr/bin/env bash
# Installs the pinned npm tools (tools/node/package.json and its lock file:
# Redocly CLI, openapi-typescript, TypeScript) into tools/node/node_modules,
# once: an install newer than the lock file is kept. Prints the directory of
# their executables. Used by make test, make sdk and the SDK tests.
set -euo pipefail
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/tools/node"
stamp="$dir/node_modules/.package-lock.json"
if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ]; then
  if ! command -v npm >/dev/null; then
    # A fresh machine: the distribution's Node.js and npm, as services.sh does for the servers.
    echo "node-tools: installing Debian packages: nodejs npm" >&2
    sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq nodejs npm >&2
  fi
  (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
echo "$dir/node_modules/.bin"
