#!/usr/bin/env bash
# Shared-mode reads against the embedded default, in one run (issue 17):
# the same dataset (USERS players, default 100,000, and SCORES scores,
# default 1,000,000, seed 1) loaded into an embedded server (SQLite) and a
# MariaDB + Redis server, then `wrk -t2 -c16 -d5s` on each, side by side:
# the top page, the page halfway down, the top player's profile and the
# bottom player's (whose rank counts the most entries). Needs a release
# build, wrk, python3, MariaDB and Redis on their default ports; drops and
# recreates the database hiscore_shared_reads.
# CONNECTIONS (default 16) is wrk's -c: at 16 a shared read waits on its
# round trip, at 64 the two cores are busy either way.
# ROUNDS (default 1) repeats each pair of measurements, alternating the two
# servers, so that the machine's drift shows in the ratios.
#   USERS=1000000 SCORES=4000000 scripts/shared_reads.sh   # the 1M figures
set -eu
cd "$(dirname "$0")/.."
token=shared-reads-admin-token-long-enough
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mysql -h127.0.0.1 -uroot -e 'DROP DATABASE IF EXISTS hiscore_shared_reads; CREATE DATABASE hiscore_shared_reads'
redis-cli --scan --pattern 'shared-reads:*' | xargs -r redis-cli del > /dev/null
start() { # port, extra args…
  local port=$1; shift
  if curl -fsS "127.0.0.1:$port/healthz" > /dev/null 2>&1; then echo "port $port is taken" >&2; exit 1; fi
  ADMIN_TOKEN=$token RUST_LOG=warn ./target/release/hiscore serve --bind "127.0.0.1:$port" --static-dir /nonexistent "$@" \
    > "$work/server-$port.log" 2>&1 &
  for _ in $(seq 1 100); do curl -fsS "127.0.0.1:$port/healthz" > /dev/null 2>&1 && break; sleep 0.1; done
  curl -fsS -XPOST "127.0.0.1:$port/api/admin/initialize" -H "Authorization: Bearer $token" \
    -H 'content-type: application/json' -d "{\"users\":${USERS:-100000},\"scores\":${SCORES:-1000000},\"seed\":1}" > /dev/null
}
start 18101 --database-url "sqlite://$work/embedded.db"
start 18102 --database-url mysql://root@127.0.0.1:3306/hiscore_shared_reads \
  --redis-url redis://127.0.0.1:6379 --redis-prefix shared-reads
rate() { wrk -t2 -c"${CONNECTIONS:-16}" -d5s "$1" | awk '/Requests\/sec/ {print $2}'; }
field() { python3 -c "import json,sys; print(eval('json.load(sys.stdin)' + sys.argv[1]))" "$1"; }
players=$(curl -fsS "127.0.0.1:18101/api/rankings/best?limit=1" | field "['total_players']")
top=$(curl -fsS "127.0.0.1:18101/api/rankings/best?limit=1" | field "['entries'][0]['user']['id']")
bottom=$(curl -fsS "127.0.0.1:18101/api/rankings/best?limit=1&offset=$((players - 1))" | field "['entries'][0]['user']['id']")
echo "$players players on the board; top player $top, bottom player $bottom"
for what in "top page:/api/rankings/best?limit=10" "page halfway:/api/rankings/best?limit=10&offset=$((players / 2))" \
  "top player's profile:/api/users/$top" "bottom player's profile:/api/users/$bottom"; do
  name=${what%%:*}; path=${what#*:}
  for _ in $(seq 1 "${ROUNDS:-1}"); do
    embedded=$(rate "http://127.0.0.1:18101$path")
    shared=$(rate "http://127.0.0.1:18102$path")
    echo "$name: embedded $embedded req/s, MariaDB + Redis $shared req/s, ratio $(echo "scale=2; $shared / $embedded" | bc)"
  done
done
