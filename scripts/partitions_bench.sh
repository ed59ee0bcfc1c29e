#!/usr/bin/env bash
# What partitions cost (issue 40), embedded (SQLite, the in-process index),
# in one run:
# - resident memory the warm-up adds for a board of N entries, then for
#   the same N entries again spread over P partitions of it (each player
#   in one partition, as a post with a `country` puts them): the bytes per
#   partition entry, and how they compare with the board's own;
# - reads, alternating, `wrk -t2 -c16 -d6s`, two rounds: the board's top
#   page, a partition's top page, and `/cutoffs?percents=1,5,10` of the
#   board and of a partition.
# Entries and partitions go straight into the database (scores of 1,000
# values, so ties), then the server warms up from them.
#   scripts/partitions_bench.sh [BINARY] [ENTRIES] [PARTITIONS]
set -euo pipefail
binary=${1:-target/release/hiscore}
entries=${2:-1000000}
parts=${3:-1000}
token=partitions-bench-admin-token-long-enough
port=8094
source "$(dirname "$0")/embedded_server.sh"

start
admin POST /api/admin/initialize "{\"users\": $entries, \"scores\": 0, \"seed\": 1}" > /dev/null
admin POST /api/admin/boards "{\"id\": \"world\", \"name\": \"World\", \"partition_by\": \"country\", \"max_partitions\": 10000}" > /dev/null
stop
# The board's entries: user i has score (i*7919)%1000.
sqlite3 "$db" <<SQL
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $entries)
INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, metadata, plays, version,
  hidden, changed)
SELECT b.number, 0, i, (i * 7919) % 1000, -((i * 7919) % 1000), 1790000000000 + i, 0, NULL, 1, 1, 0, i
FROM n, boards b WHERE b.id = 'world';
UPDATE board_periods SET players = $entries, changes = $entries WHERE board = (SELECT number FROM boards WHERE id = 'world');
SQL
start; board=$(rss_kib); stop
# P partitions (rows of their own, as the first post to each opens them),
# user i in partition C(i % P), with the same score.
sqlite3 "$db" <<SQL
WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < $parts - 1)
INSERT INTO boards (id, name, sort_order, operator, reset, timezone, archive_periods, min_score, max_score, created_at,
  subscores, partition_of, partition_value)
SELECT b.number || ':C' || i, b.name, b.sort_order, b.operator, b.reset, b.timezone, b.archive_periods, b.min_score,
  b.max_score, b.created_at, b.subscores, b.number, 'C' || i FROM k, boards b WHERE b.id = 'world';
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < $entries)
INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, metadata, plays, version,
  hidden, changed)
SELECT p.number, 0, i, (i * 7919) % 1000, -((i * 7919) % 1000), 1790000000000 + i, 0, NULL, 1, 1, 0, i
FROM n JOIN boards p ON p.partition_of = (SELECT number FROM boards WHERE id = 'world') AND p.partition_value = 'C' || (i % $parts);
INSERT INTO board_periods (board, period, starts_at, players, changes)
SELECT p.number, 0, p.created_at, (SELECT COUNT(*) FROM board_entries e WHERE e.board = p.number), 0
FROM boards p WHERE p.partition_of = (SELECT number FROM boards WHERE id = 'world');
SQL
start; both=$(rss_kib)
echo "entries: $entries on the board, the same again over $parts partitions"
echo "resident memory: board $board KiB, board and partitions $both KiB"
echo "bytes per partition entry: $(( (both - board) * 1024 / entries ))"
curl -fsS "127.0.0.1:$port/api/boards/world/partitions?limit=2"; echo
for round in 1 2; do
  for query in "world?limit=10" "world?limit=10&partition=C7" "world/cutoffs?percents=1,5,10" \
    "world/cutoffs?percents=1,5,10&partition=C7"; do
    echo "round $round $query $(wrk -t2 -c16 -d6s "http://127.0.0.1:$port/api/rankings/$query" | awk '/Requests\/sec/ {print $2}')"
  done
done
