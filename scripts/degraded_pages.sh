#!/usr/bin/env bash
# The "Redis up vs Redis down" page figures in BENCHMARKS.md: a release
# server on MariaDB + Redis with 1M players / 4M scores (database
# hiscore_big, dropped and recreated), wrk per URL with Redis up, then with
# Redis shut down (the board is read from MariaDB), then Redis started again
# (empty) and the top page once more. It STOPS the machine's Redis: run it
# alone. Needs wrk, curl, bc; MariaDB and Redis on their default ports.
set -u
cd "$(dirname "$0")/.."
cargo build --release --quiet
mysql -h127.0.0.1 -uroot -e 'DROP DATABASE IF EXISTS hiscore_big; CREATE DATABASE hiscore_big'
ADMIN_TOKEN=m RUST_LOG=info ./target/release/hiscore serve --bind 127.0.0.1:18091 \
  --database-url mysql://root@127.0.0.1:3306/hiscore_big --redis-url redis://127.0.0.1:6379 --redis-prefix big \
  --static-dir static > "${TMPDIR:-/tmp}/degraded-pages-server.log" 2>&1 &
server=$!
sleep 3
/usr/bin/time -f "initialize %e s" curl -s -X POST -H 'Authorization: Bearer m' -H 'Content-Type: application/json' \
  -d '{"users":1000000,"scores":4000000,"seed":1}' http://127.0.0.1:18091/api/admin/initialize | head -c 300; echo
echo "rss after initialize: $(awk '/VmRSS/ {print $2}' /proc/$server/status) KiB"
top=$(curl -s 'http://127.0.0.1:18091/api/rankings/best?limit=1' | grep -o '"id":[0-9]*' | head -1 | cut -d: -f2)
bottom=$(curl -s 'http://127.0.0.1:18091/api/rankings/best?limit=1&offset=939000' | grep -o '"id":[0-9]*' | head -1 | cut -d: -f2)
echo "top=$top bottom=$bottom"
run() { echo "== $1"; wrk -t2 -c16 -d8s "$2" | grep -E "Requests/sec|Latency"; }
measure() {
  run "top page" 'http://127.0.0.1:18091/api/rankings/best?limit=10'
  run "offset 500000" 'http://127.0.0.1:18091/api/rankings/best?limit=10&offset=500000'
  run "top player" "http://127.0.0.1:18091/api/users/$top"
  run "bottom player" "http://127.0.0.1:18091/api/users/$bottom"
}
echo "##### Redis healthy: $(curl -s http://127.0.0.1:18091/healthz)"
measure
redis-cli shutdown nosave
sleep 2
echo "##### Redis stopped: $(curl -s http://127.0.0.1:18091/healthz)"
measure
redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no --dir /var/lib/redis --logfile /var/log/redis/ci.log
start=$(date +%s.%N)
until curl -s http://127.0.0.1:18091/healthz | grep -q '"redis":"ok"'; do sleep 0.2; done
echo "rebuilt after Redis restart in $(echo "$(date +%s.%N) - $start" | bc) s"
echo "##### Redis back: $(curl -s http://127.0.0.1:18091/healthz)"
run "top page" 'http://127.0.0.1:18091/api/rankings/best?limit=10'
kill $server
grep -i "warm\|rebuil" "${TMPDIR:-/tmp}/degraded-pages-server.log" | tail -5
