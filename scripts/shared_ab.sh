#!/usr/bin/env bash
# Two builds of hiscore in shared mode against each other and against
# embedded (issue 43: a change to page leases, measured before it is
# kept): an embedded server (build A) and two MariaDB + Redis servers on
# one database, one of build A and one of build B, all with the same data
# (USERS players, default 100,000, SCORES scores, default 1,000,000, seed
# 1), then the top page driven at each in turn, ROUNDS times (default 10;
# `wrk -t2 -c16 -d5s`). Each line gives requests/s and each shared
# server's ratio to embedded: on a noisy machine compare the medians.
# SHARED_ARGS adds arguments to both shared servers (e.g.
# "--page-lease-us 1000000" to see what renewals cost). Needs wrk, curl,
# bc, MariaDB and Redis on their default ports; drops and recreates the
# database hiscore_shared_ab.
#   scripts/shared_ab.sh BINARY_A BINARY_B
set -eu
a=$(realpath "$1"); b=$(realpath "$2")
token=shared-ab-admin-token-long-enough-to-pass
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mysql -h127.0.0.1 -uroot -e 'DROP DATABASE IF EXISTS hiscore_shared_ab; CREATE DATABASE hiscore_shared_ab'
redis-cli --scan --pattern 'shared-ab:*' | xargs -r redis-cli del > /dev/null
shared=(--database-url mysql://root@127.0.0.1:3306/hiscore_shared_ab --redis-url redis://127.0.0.1:6379
  --redis-prefix shared-ab)
start() { # binary, port, initialize (1/0), arguments…
  local binary=$1 port=$2 initialize=$3; shift 3
  if curl -fsS "127.0.0.1:$port/healthz" > /dev/null 2>&1; then echo "port $port is taken" >&2; exit 1; fi
  ADMIN_TOKEN=$token RUST_LOG=warn "$binary" serve --bind "127.0.0.1:$port" --static-dir /nonexistent "$@" \
    > "$work/server-$port.log" 2>&1 &
  for _ in $(seq 1 300); do curl -fsS "127.0.0.1:$port/readyz" > /dev/null 2>&1 && break; sleep 0.2; done
  if [ "$initialize" = 1 ]; then
    curl -fsS -XPOST "127.0.0.1:$port/api/admin/initialize" -H "Authorization: Bearer $token" \
      -H 'content-type: application/json' \
      -d "{\"users\":${USERS:-100000},\"scores\":${SCORES:-1000000},\"seed\":1}" > /dev/null
  fi
}
# shellcheck disable=SC2086 # SHARED_ARGS is a list of arguments
{
  start "$a" 18131 1 --database-url "sqlite://$work/embedded.db"
  start "$a" 18132 1 "${shared[@]}" ${SHARED_ARGS:-}
  start "$b" 18133 0 "${shared[@]}" ${SHARED_ARGS:-}
}
rate() { wrk -t2 -c16 -d5s "http://127.0.0.1:$1/api/rankings/best?limit=10" | awk '/Requests\/sec/ {print $2}'; }
echo "top page, wrk -t2 -c16 -d5s; ratio = shared / embedded"
for round in $(seq 1 "${ROUNDS:-10}"); do
  embedded=$(rate 18131); shared_a=$(rate 18132); shared_b=$(rate 18133)
  echo "round $round: embedded $embedded req/s, shared A $shared_a ($(echo "scale=2; $shared_a / $embedded" | bc))," \
    "shared B $shared_b ($(echo "scale=2; $shared_b / $embedded" | bc))"
done
