#!/usr/bin/env bash
# What a board with two subscores costs against a plain board of the same
# entries, embedded (SQLite, the in-process index), in one run:
# - resident memory the warm-up adds for N entries of each (the server
#   restarted with none, with the plain board's, then with both boards');
# - reads, alternating, `wrk -t2 -c16 -d6s`, two rounds: the top page, a
#   page at offset N*3/4 (limit 10) and around a player (radius 5).
# Entries go straight into the database (scores of 1,000 values, so ties;
# subscores of 5 and 1,000 values), then the server warms up from them.
#   scripts/subscores_bench.sh [BINARY] [ENTRIES]
set -euo pipefail
binary=${1:-target/release/hiscore}
entries=${2:-200000}
token=subscores-bench-admin-token-long-enough
port=8093
source "$(dirname "$0")/embedded_server.sh"

start
admin POST /api/admin/initialize "{\"users\": $entries, \"scores\": 0, \"seed\": 1}" > /dev/null
admin POST /api/admin/boards '{"id": "plain", "name": "Plain"}' > /dev/null
admin POST /api/admin/boards '{"id": "ties", "name": "Ties", "subscores": [{"name": "kills", "order": "desc"}, {"name": "time_ms", "order": "asc"}]}' > /dev/null
stop
# One board's entries: user i has score (i*7919)%1000, kills (i*31)%5,
# time (i*17)%1000 (the plain board: the same scores, no subscores).
fill() { # board id, 1 for subscores
  sqlite3 "$db" <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $entries)
INSERT INTO board_entries (board, period, user_id, score, rank_score, subscore1, subscore2, rank_sub1, rank_sub2,
  achieved_at, post_id, metadata, plays, version, hidden, changed)
SELECT b.number, 0, i, (i * 7919) % 1000, -((i * 7919) % 1000), $2 * ((i * 31) % 5), $2 * ((i * 17) % 1000),
  -$2 * ((i * 31) % 5), $2 * ((i * 17) % 1000), 1790000000000 + i, 0, NULL, 1, 1, 0, i
FROM n, boards b WHERE b.id = '$1';
INSERT OR REPLACE INTO board_periods (board, period, starts_at, players, changes)
SELECT number, 0, created_at, $entries, $entries FROM boards WHERE id = '$1';
SQL
}
start; none=$(rss_kib); stop
fill plain 0
start; plain=$(rss_kib); stop
fill ties 1
start; both=$(rss_kib)
echo "entries per board: $entries"
echo "resident memory: none $none KiB, plain board $plain KiB, both $both KiB"
echo "bytes per entry: plain $(( (plain - none) * 1024 / entries )), with two subscores $(( (both - plain) * 1024 / entries ))"
curl -fsS "127.0.0.1:$port/api/rankings/ties?limit=2"; echo
deep=$(( entries * 3 / 4 ))
for round in 1 2; do
  for board in plain ties; do
    for query in "$board?limit=10" "$board?limit=10&offset=$deep" "$board/around/$(( entries / 2 ))?radius=5"; do
      echo "round $round $query $(wrk -t2 -c16 -d6s "http://127.0.0.1:$port/api/rankings/$query" | awk '/Requests\/sec/ {print $2}')"
    done
  done
done
