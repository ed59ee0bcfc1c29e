#!/usr/bin/env bash
# What an export costs (issue 41): the `best` board of PLAYERS players
# (embedded), exported as CSV and as NDJSON, against walking the same
# board by cursor pages of 100 (the API's largest), in the same run: the
# time of each, and the server's resident memory sampled every 50 ms
# (its peak during each against its level before).
#   scripts/export_bench.sh BINARY [PLAYERS] [SCORES]
# (SCORES defaults to PLAYERS; the script prints how many players are on
# the board.)
# SERVER_ARGS replaces the database (e.g. MariaDB + Redis):
#   SERVER_ARGS="--database-url mysql://root@127.0.0.1:3306/hiscore_export --redis-url redis://127.0.0.1:6379 \
#     --redis-prefix export-bench" scripts/export_bench.sh target/release/hiscore
set -eu
binary=$1; players=${2:-1000000}; scores=${3:-$players}
admin=export-bench-admin-token-long-enough-32
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # SERVER_ARGS is a list of arguments
RUST_LOG=warn STATIC_DIR=/nonexistent ADMIN_TOKEN=$admin "$binary" serve --bind 127.0.0.1:18096 \
  ${SERVER_ARGS:---database-url sqlite://$work/db.sqlite?mode=rwc} > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do curl -fsS 127.0.0.1:18096/healthz >/dev/null 2>&1 && break; sleep 0.1; done
curl -fsS -XPOST 127.0.0.1:18096/api/admin/initialize -H "Authorization: Bearer $admin" \
  -H 'content-type: application/json' -d "{\"users\": $players, \"scores\": $scores, \"seed\": 1}"; echo
echo "entries on best: $(curl -fsS '127.0.0.1:18096/api/rankings/best?limit=1' | python3 -c 'import json, sys; print(json.load(sys.stdin)["total_players"])')"
rss() { awk '/VmRSS/ {print $2}' "/proc/$server/status"; }
# Runs a command while sampling the server's RSS; prints seconds and the peak growth in MB.
measure() {
  local before peak=0 start end
  before=$(rss)
  ( while true; do rss >> "$work/samples"; sleep 0.05; done ) & local sampler=$!
  : > "$work/samples"
  start=$(date +%s.%N)
  "$@" > "$work/out"
  end=$(date +%s.%N)
  kill $sampler; wait $sampler 2>/dev/null || true
  peak=$(sort -n "$work/samples" | tail -1)
  echo "$(echo "$end - $start" | bc) s, RSS ${before} kB before, peak +$(( (peak - before) / 1024 )) MB, $(wc -c < "$work/out") bytes"
}
walk() {
  python3 - <<'PY'
import json, urllib.request
url, n, cursor = "http://127.0.0.1:18096/api/rankings/best?limit=100", 0, None
while True:
    with urllib.request.urlopen(url + (f"&cursor={cursor}" if cursor else "")) as r:
        page = json.load(r)
    n += len(page["entries"])
    cursor = page["next_cursor"]
    if not cursor:
        break
print(n)
PY
}
for round in 1 2; do
  echo "round $round csv:    $(measure curl -fsS "127.0.0.1:18096/api/admin/boards/best/export" -H "Authorization: Bearer $admin")"
  echo "round $round ndjson: $(measure curl -fsS "127.0.0.1:18096/api/admin/boards/best/export?format=ndjson" -H "Authorization: Bearer $admin")"
  echo "round $round pages:  $(measure walk)"
done
