#!/usr/bin/env bash
# A real code generator against the served OpenAPI document (issue: prove
# the document is usable): openapi-typescript (npm) regenerates the typed
# client of examples/typescript from a live server's /api/openapi.json, the
# committed copy must be identical (regenerate it with `npm run generate`
# after an API change), tsc type-checks the example flow against it, and the
# flow runs against the server: register, post with an Idempotency-Key and
# its replay, a 429 ridden out by Retry-After, a cursor walk.
set -euo pipefail
cd "$(dirname "$0")/.."
binary="${1:-${CARGO_TARGET_DIR:-target}/debug/hiscore}"
[ -x "$binary" ] || { echo "FATAL: $binary not found (run cargo test first)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; }
port=18091
workdir="$(mktemp -d)"
# One post per player per second: the flow's second concurrent post meets 429.
RATE_POSTS_PER_PLAYER=1 BCRYPT_COST=4 RUST_LOG=error \
  "$binary" serve --bind "127.0.0.1:$port" --database-url "sqlite://$workdir/hiscore.db" --static-dir /nonexistent &
server=$!
trap 'kill $server 2>/dev/null || true; rm -rf "$workdir"' EXIT
for _ in $(seq 1 100); do curl -fsS "127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done

cd examples/typescript
npm ci --no-audit --no-fund --loglevel=error
HISCORE="http://127.0.0.1:$port" npm run --silent generate
git diff --exit-code -- src/schema.d.ts || {
  echo "FATAL: examples/typescript/src/schema.d.ts is out of date: run 'npm run generate' there against a fresh server" >&2
  exit 1
}
npm run --silent build
npm run --silent flow -- "http://127.0.0.1:$port"
