#!/usr/bin/env bash
# How many instances one Redis and one MariaDB feed on this machine: page
# and profile reads through nginx in front of one instance, then of two,
# alternating ROUNDS times (default 2), `wrk -t2 -c32 -d5s`. Uses the
# database scripts/cluster_reads.sh leaves (hiscore_cluster_reads; run that
# first) and the machine's Redis (key prefix instances-reads); needs a
# release build, nginx and wrk.
set -eu
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
redis-cli --scan --pattern 'instances-reads:*' | xargs -r redis-cli del > /dev/null
for port in 18131 18132; do
  RUST_LOG=warn ./target/release/hiscore serve --bind "127.0.0.1:$port" --static-dir /nonexistent \
    --database-url mysql://root@127.0.0.1:3306/hiscore_cluster_reads --redis-url redis://127.0.0.1:6379 \
    --redis-prefix instances-reads > "$work/server-$port.log" 2>&1 &
  until curl -fsS "127.0.0.1:$port/healthz" 2>/dev/null | grep -q '"redis":"ok"'; do sleep 0.2; done
done
LISTEN=127.0.0.1:18140 UPSTREAMS=127.0.0.1:18131 PREFIX="$work/one" nginx/run-local.sh > /dev/null &
LISTEN=127.0.0.1:18141 UPSTREAMS=127.0.0.1:18131,127.0.0.1:18132 PREFIX="$work/two" nginx/run-local.sh > /dev/null &
sleep 1
rate() { wrk -t2 -c32 -d5s "$1" | awk '/Requests\/sec/ {print $2}'; }
for what in "top page:/api/rankings/best?limit=10" "a profile:/api/users/8167"; do
  name=${what%%:*}; path=${what#*:}
  for _ in $(seq 1 "${ROUNDS:-2}"); do
    one=$(rate "http://127.0.0.1:18140$path"); two=$(rate "http://127.0.0.1:18141$path")
    echo "$name: one instance $one req/s, two instances $two req/s, ratio $(echo "scale=2; $two / $one" | bc)"
  done
done
