#!/usr/bin/env bash
# A/B of two builds on one embedded database: start a binary on it, run
# `wrk -t2 -c16 -d8s` on the top page, the page at offset 500,000 and two
# profiles, stop it, the other binary, and again (two rounds, alternating,
# so that both see the same machine). Use a database initialized with
# {"users":1000000,"scores":4000000} (the BENCHMARKS.md dataset: players
# 381859 and 658565 are the top and the bottom of the best board).
# URLS (space-separated, without the leading slash) replaces the four reads.
#   scripts/rank_ab.sh OLD_BINARY NEW_BINARY /path/to/hiscore.db
set -u
old=$1; new=$2; db=$3
read -r -a urls <<< "${URLS:-api/rankings/best?limit=10 api/rankings/best?limit=10&offset=500000 api/users/381859 api/users/658565}"
run() { # binary label
  RUST_LOG=info BIND=127.0.0.1:8090 DATABASE_URL="sqlite://$db" STATIC_DIR=/nonexistent "$1" serve \
    > "${TMPDIR:-/tmp}/rank_ab_$2.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 600); do curl -fsS 127.0.0.1:8090/healthz >/dev/null 2>&1 && break; sleep 0.2; done
  for url in "${urls[@]}"; do
    echo "$2 $url $(wrk -t2 -c16 -d8s "http://127.0.0.1:8090/$url" | awk '/Requests\/sec/ {print $2}')"
  done
  kill $pid; wait $pid 2>/dev/null
}
for _ in 1 2; do run "$old" old; run "$new" new; done
