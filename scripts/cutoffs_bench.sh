#!/usr/bin/env bash
# `/cutoffs` against the board's own top page, in one run, alternating:
# `wrk -t2 -c16 -d8s` on the top page (`limit=10`), cut-offs of 3 percents
# and of 10, two rounds. Use a database initialized with
# {"users":1000000,"scores":4000000} (the BENCHMARKS.md dataset), or pass
# none and the script makes one (about a minute).
#   scripts/cutoffs_bench.sh [BINARY] [/path/to/hiscore.db]
set -euo pipefail
binary=${1:-target/release/hiscore}
db=${2:-}
token=cutoffs-bench-admin-token-long-enough-32
port=8092
if [ -z "$db" ]; then
  db="$(mktemp -d)/hiscore.db"
  fresh=1
fi
ADMIN_TOKEN=$token RUST_LOG=warn BIND=127.0.0.1:$port DATABASE_URL="sqlite://$db" STATIC_DIR=/nonexistent \
  "$binary" serve > "${TMPDIR:-/tmp}/cutoffs_bench.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do curl -fsS 127.0.0.1:$port/readyz >/dev/null 2>&1 && break; sleep 0.2; done
if [ -n "${fresh:-}" ]; then
  curl -fsS -XPOST 127.0.0.1:$port/api/admin/initialize -H "authorization: Bearer $token" \
    -H 'content-type: application/json' -d '{"users":1000000,"scores":4000000}'
  echo
fi
curl -fsS "127.0.0.1:$port/api/rankings/best/cutoffs?percents=1,5,10"
echo
for round in 1 2; do
  for url in 'api/rankings/best?limit=10' 'api/rankings/best/cutoffs?percents=1,5,10' \
    'api/rankings/best/cutoffs?percents=0.01,1,2,5,10,20,30,50,75,100'; do
    echo "round $round $url $(wrk -t2 -c16 -d8s "http://127.0.0.1:$port/$url" | awk '/Requests\/sec/ {print $2}')"
  done
done
