#!/usr/bin/env bash
# Two builds of hiscore against each other on the reads a game makes
# (issue 43: a change to the request path, measured before it is kept):
# both serve the same embedded dataset (USERS players, SCORES scores, seed
# 1), and each read is driven at A then B, ROUNDS times (`wrk -t2 -c50
# -dSECSs`). Each line gives requests/s and the server's CPU time per
# request (its utime + stime over the run, in 10 ms ticks), and B/A of
# both: on a noisy machine compare the medians of several rounds. Each
# also has a custom board `runs` (scripts/custom_board.sh).
#   scripts/reads_ab.sh BINARY_A BINARY_B
#   ROUNDS=6 SECS=5 PATHS="/api/rankings/best?limit=10 /api/users/100000" scripts/reads_ab.sh A B
# Needs wrk, curl and bc. (`scripts/rank_ab.sh` runs two builds in turn on
# one database instead: for a build that migrates it.)
set -eu
a=$(realpath "$1"); b=$(realpath "$2")
cd "$(dirname "$0")/.."
# shellcheck source=scripts/custom_board.sh
source scripts/custom_board.sh
token=reads-ab-admin-token-long-enough-to-pass
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
pids=()
for side in 0 1; do
  binary=$a; [ "$side" = 1 ] && binary=$b
  port=$((18121 + side))
  ADMIN_TOKEN=$token RUST_LOG=warn "$binary" serve --bind 127.0.0.1:$port --static-dir /nonexistent \
    --database-url "sqlite://$work/db$side.db" > "$work/server$side.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 300); do curl -fsS 127.0.0.1:$port/readyz > /dev/null 2>&1 && break; sleep 0.2; done
  curl -fsS -XPOST 127.0.0.1:$port/api/admin/initialize -H "Authorization: Bearer $token" \
    -H 'content-type: application/json' \
    -d "{\"users\":${USERS:-200000},\"scores\":${SCORES:-800000},\"seed\":1}" > /dev/null
  custom_board "http://127.0.0.1:$port" "$token" "${USERS:-200000}" "$work"
done
# shellcheck disable=SC2206 # PATHS is a list of paths
paths=(${PATHS:-"/api/rankings/best?limit=10" "/api/rankings/best?limit=10&offset=150000"
  "/api/users/100000" "/api/rankings/best/around/100000?radius=5"})
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
# "requests/s microseconds-of-CPU-per-request" of one run against one side.
run() {
  local before after
  before=$(cpu_ticks "$2")
  wrk -t2 -c50 -d"${SECS:-6}"s "$1" > "$work/wrk.txt"
  after=$(cpu_ticks "$2")
  echo "$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")" \
    "$(echo "scale=2; ($after - $before) * 10000 / $(awk '/requests in/ {print $1}' "$work/wrk.txt")" | bc)"
}
for path in "${paths[@]}"; do
  for _ in $(seq 1 "${ROUNDS:-2}"); do
    read -r rate_a cpu_a < <(run "http://127.0.0.1:18121$path" "${pids[0]}")
    read -r rate_b cpu_b < <(run "http://127.0.0.1:18122$path" "${pids[1]}")
    echo "$path: A $rate_a req/s ${cpu_a} us/req, B $rate_b req/s ${cpu_b} us/req," \
      "B/A $(echo "scale=2; $rate_b / $rate_a" | bc) (CPU $(echo "scale=2; $cpu_b / $cpu_a" | bc))"
  done
done
