#!/usr/bin/env bash
# Shared-mode reads on a Redis Cluster against a single Redis, in one run
# (issue: scale out): one MariaDB database loaded with USERS players
# (default 100,000) and SCORES scores (default 1,000,000, seed 1), served
# by two instances: one on the machine's Redis (127.0.0.1:6379), one on a
# Redis Cluster this script starts (six nodes on ports 30001-30006, three
# masters with a replica each). Then `wrk -t2 -c16 -d5s` on each, side by
# side: the top page, a page halfway down, the top player's profile and the
# bottom player's. Needs a release build, wrk, python3, bc, MariaDB and
# Redis; drops and recreates the database hiscore_cluster_reads.
# ROUNDS (default 1) repeats each pair, alternating the two instances.
set -eu
cd "$(dirname "$0")/.."
token=cluster-reads-admin-token-long-enough
work=$(mktemp -d)
ports="30001 30002 30003 30004 30005 30006"
trap 'kill $(jobs -p) 2>/dev/null || true; for p in $ports; do redis-cli -p $p shutdown nosave >/dev/null 2>&1 || true; done; rm -rf "$work"' EXIT
mysql -h127.0.0.1 -uroot -e 'DROP DATABASE IF EXISTS hiscore_cluster_reads; CREATE DATABASE hiscore_cluster_reads'
redis-cli --scan --pattern 'cluster-reads:*' | xargs -r redis-cli del > /dev/null
for p in $ports; do
  redis-server --port "$p" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "nodes-$p.conf" \
    --cluster-node-timeout 5000 --save '' --appendonly no --dir "$work" --daemonize yes --logfile "$work/redis-$p.log"
done
for p in $ports; do until [ "$(redis-cli -p "$p" ping 2>/dev/null)" = PONG ]; do sleep 0.1; done; done
redis-cli --cluster create $(for p in $ports; do echo "127.0.0.1:$p"; done) --cluster-replicas 1 --cluster-yes > /dev/null
until redis-cli -p 30001 cluster info | grep -q cluster_state:ok; do sleep 0.2; done
database=mysql://root@127.0.0.1:3306/hiscore_cluster_reads
start() { # port, redis url
  ADMIN_TOKEN=$token RUST_LOG=warn ./target/release/hiscore serve --bind "127.0.0.1:$1" --static-dir /nonexistent \
    --database-url "$database" --redis-url "$2" --redis-prefix cluster-reads > "$work/server-$1.log" 2>&1 &
  for _ in $(seq 1 600); do curl -fsS "127.0.0.1:$1/readyz" > /dev/null 2>&1 && break; sleep 0.1; done
}
start 18111 redis://127.0.0.1:6379
curl -fsS -XPOST "127.0.0.1:18111/api/admin/initialize" -H "Authorization: Bearer $token" \
  -H 'content-type: application/json' -d "{\"users\":${USERS:-100000},\"scores\":${SCORES:-1000000},\"seed\":1}" > /dev/null
# Started after the data is in: its warm-up builds the boards in the cluster.
start 18112 redis+cluster://127.0.0.1:30001,127.0.0.1:30002,127.0.0.1:30003
until curl -fsS 127.0.0.1:18112/healthz | grep -q '"redis":"ok"'; do sleep 0.2; done
rate() { wrk -t2 -c16 -d5s "$1" | awk '/Requests\/sec/ {print $2}'; }
field() { python3 -c "import json,sys; print(eval('json.load(sys.stdin)' + sys.argv[1]))" "$1"; }
players=$(curl -fsS "127.0.0.1:18111/api/rankings/best?limit=1" | field "['total_players']")
top=$(curl -fsS "127.0.0.1:18111/api/rankings/best?limit=1" | field "['entries'][0]['user']['id']")
bottom=$(curl -fsS "127.0.0.1:18111/api/rankings/best?limit=1&offset=$((players - 1))" | field "['entries'][0]['user']['id']")
echo "$players players on the board; top player $top, bottom player $bottom"
for what in "top page:/api/rankings/best?limit=10" "page halfway:/api/rankings/best?limit=10&offset=$((players / 2))" \
  "top player's profile:/api/users/$top" "bottom player's profile:/api/users/$bottom"; do
  name=${what%%:*}; path=${what#*:}
  for _ in $(seq 1 "${ROUNDS:-1}"); do
    single=$(rate "http://127.0.0.1:18111$path")
    cluster=$(rate "http://127.0.0.1:18112$path")
    echo "$name: single Redis $single req/s, Redis Cluster $cluster req/s, ratio $(echo "scale=2; $cluster / $single" | bc)"
  done
done
