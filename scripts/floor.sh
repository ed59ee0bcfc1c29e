#!/usr/bin/env bash
# Reads at the framework's floor (issue 43): each read a game makes,
# against the floor program (examples/floor.rs: actix-web answering a
# fixed body) answering a body of the read's own size, in one run,
# alternating, `wrk -t2 -c50 -d8s` each, ROUNDS rounds (default 2). The
# embedded server holds USERS players (default 200,000) with SCORES
# scores (default 800,000, seed 1), and a custom board `runs` with what a
# server key posts for them in 4 s (about 10,000 entries). Needs release
# builds of hiscore and of the example (`cargo build --release --bin
# hiscore --example floor`), wrk and python3. HISCORE (default
# ./target/release/hiscore) names the build to measure.
#   scripts/floor.sh                     # the BENCHMARKS.md figures
#   SERVER_ARGS="--database-url mysql://… --redis-url redis://…" scripts/floor.sh
set -eu
cd "$(dirname "$0")/.."
token=floor-admin-token-long-enough-to-pass
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
for port in 18111 18112; do
  if curl -fsS "127.0.0.1:$port/" > /dev/null 2>&1; then echo "port $port is taken" >&2; exit 1; fi
done
# shellcheck disable=SC2086 # SERVER_ARGS is a list of arguments
ADMIN_TOKEN=$token RUST_LOG=warn "${HISCORE:-./target/release/hiscore}" serve --bind 127.0.0.1:18111 --static-dir /nonexistent \
  ${SERVER_ARGS:---database-url sqlite://$work/floor.db} > "$work/server.log" 2>&1 &
for _ in $(seq 1 300); do curl -fsS 127.0.0.1:18111/readyz > /dev/null 2>&1 && break; sleep 0.2; done
curl -fsS -XPOST 127.0.0.1:18111/api/admin/initialize -H "Authorization: Bearer $token" \
  -H 'content-type: application/json' -d "{\"users\":${USERS:-200000},\"scores\":${SCORES:-800000},\"seed\":1}" > /dev/null

field() { python3 -c "import json,sys; print(eval('json.load(sys.stdin)' + sys.argv[1]))" "$1"; }
h=http://127.0.0.1:18111
players=$(curl -fsS "$h/api/rankings/best?limit=1" | field "['total_players']")
middle=$(curl -fsS "$h/api/rankings/best?limit=1&offset=$((players / 2))" | field "['entries'][0]['user']['id']")
friends=$(curl -fsS "$h/api/rankings/best?limit=100&offset=$((players / 3))" |
  python3 -c "import json,sys; print(','.join(str(e['user']['id']) for e in json.load(sys.stdin)['entries']))")
# shellcheck source=scripts/custom_board.sh
source scripts/custom_board.sh
custom_board "$h" "$token" "$players" "$work"
reads=(
  "top page|/api/rankings/best?limit=10"
  "a custom board's top page|/api/rankings/runs?limit=10"
  "page at offset 150,000|/api/rankings/best?limit=10&offset=150000"
  "around me (radius 5)|/api/rankings/best/around/$middle?radius=5"
  "friends board of 100|/api/rankings/best/users?ids=$friends"
  "profile|/api/users/$middle"
)
sizes=()
for read in "${reads[@]}"; do sizes+=("$(curl -fsS "$h${read#*|}" | wc -c)"); done
./target/release/examples/floor 127.0.0.1:18112 "${sizes[@]}" > "$work/floor.log" 2>&1 &
for _ in $(seq 1 100); do curl -fsS "127.0.0.1:18112/${sizes[0]}" > /dev/null 2>&1 && break; sleep 0.1; done

rate() { wrk -t2 -c50 -d8s "$1" | awk '/Requests\/sec/ {print $2}'; }
echo "$players players; wrk -t2 -c50 -d8s; ratio = hiscore / floor of the same size"
for i in "${!reads[@]}"; do
  name=${reads[$i]%%|*}; path=${reads[$i]#*|}
  for _ in $(seq 1 "${ROUNDS:-2}"); do
    served=$(rate "$h$path")
    floor=$(rate "http://127.0.0.1:18112/${sizes[$i]}")
    echo "$name (${sizes[$i]} bytes): hiscore $served req/s, floor $floor req/s, ratio $(echo "scale=2; $served / $floor" | bc)"
  done
done
# The top page against raw Redis answering the same question (the issue's
# second yardstick): ZREVRANGE 0 9 WITHSCORES on a sorted set of as many
# members, 50 connections, if a Redis answers on 127.0.0.1:6379.
if redis-cli ping > /dev/null 2>&1; then
  zset=floor:bench:zset
  python3 -c "import sys; [print(f'ZADD $zset {(i * 7919) % 1000003} p{i}') for i in range($players)]" |
    redis-cli --pipe > /dev/null
  for _ in $(seq 1 "${ROUNDS:-2}"); do
    served=$(rate "$h/api/rankings/best?limit=10")
    raw=$(redis-benchmark -c 50 -n 800000 -q ZREVRANGE "$zset" 0 9 WITHSCORES | tr '\r' '\n' |
      sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p')
    echo "top page: hiscore $served req/s, redis-benchmark ZREVRANGE 0 9 WITHSCORES $raw req/s," \
      "ratio $(echo "scale=2; $served / $raw" | bc)"
  done
  redis-cli del "$zset" > /dev/null
fi
