#!/usr/bin/env bash
# What `feeds` cost a post (issue 40): posts/s to a custom board that feeds
# three boards (one resetting daily, one weekly, one never), each
# partitioned by the posts' `country` (20 values), against posts/s to a
# plain board, in the same run on one server, rounds alternating (PLAYERS
# players, 64 unless set, posting from 64 connections, `wrk -t2 -c64 -d8s`;
# both post the same bodies), then a check that every fed board, and the
# sum of its partitions, hold one post per post to the family board.
# PARTITIONED=one partitions only the all-time board (five boards a post,
# not seven). With 64 players each posts hundreds of times a board in a
# run: a long history each, as a bot's; PLAYERS=3000 gives each a short one.
#   scripts/feeds_rate.sh DATABASE_URL BINARY [ROUNDS]
# DATABASE_URL: sqlite:///tmp/x.db or mysql://root@127.0.0.1:3306/hiscore_feeds
# (a MySQL database is dropped and recreated). Needs wrk and curl.
set -eu
url=$1; binary=$2; rounds=${3:-2}
admin=feeds-rate-admin-token-long-enough-32
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
case "$url" in
  sqlite://*) rm -f "${url#sqlite://}"* ;;
  mysql://*)
    db=${url##*/}; address=${url#*@}; address=${address%%/*}
    mysql -h"${address%:*}" -P"${address##*:}" -uroot -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db" ;;
esac
RUST_LOG=warn BCRYPT_COST=4 RATE_POSTS_PER_PLAYER=0 RATE_REGISTER_PER_ADDRESS=0 STATIC_DIR=/nonexistent \
  ADMIN_TOKEN=$admin "$binary" serve --bind 127.0.0.1:18093 --database-url "$url" > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 1 100); do curl -fsS 127.0.0.1:18093/healthz >/dev/null 2>&1 && break; sleep 0.1; done
board() {
  curl -fsS -XPOST 127.0.0.1:18093/api/admin/boards -H "Authorization: Bearer $admin" \
    -H 'content-type: application/json' -d "$1" > /dev/null
}
board '{"id": "plain", "name": "plain"}'
partition=', "partition_by": "country"'
[ "${PARTITIONED:-all}" = one ] && partition=''
board '{"id": "f-daily", "name": "daily", "reset": "0 0 * * *"'"$partition"'}'
board '{"id": "f-weekly", "name": "weekly", "reset": "0 0 * * 1"'"$partition"'}'
board '{"id": "f-all", "name": "all time", "partition_by": "country"}'
board '{"id": "family", "name": "family", "feeds": ["f-daily", "f-weekly", "f-all"]}'
tokens=()
for i in $(seq 1 "${PLAYERS:-64}"); do
  registered=$(curl -fsS -XPOST 127.0.0.1:18093/api/users -H 'content-type: application/json' \
    -d "{\"login_name\":\"poster$i\",\"password\":\"poster-password\"}")
  tokens+=("$(echo "$registered" | sed 's/.*"token":"\([^"]*\)".*/\1/')")
done
for target in plain family; do
  {
    echo "tokens = {"; for t in "${tokens[@]}"; do echo "  \"$t\","; done; echo "}"
    cat <<LUA
counter = 0
request = function()
  counter = counter + 1
  local headers = {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1]}
  local body = '{"score": ' .. (counter % 1000) .. ', "metadata": {"country": "C' .. (counter % 20) .. '"}}'
  return wrk.format("POST", "/api/boards/$target/scores", headers, body)
end
LUA
  } > "$work/$target.lua"
done
declare -A posted=([plain]=0 [family]=0)
for round in $(seq 1 "$rounds"); do
  for target in plain family; do
    wrk -t2 -c64 -d8s -s "$work/$target.lua" http://127.0.0.1:18093 > "$work/wrk.txt"
    rate=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
    failed=$(awk '/Non-2xx/ {print $5}' "$work/wrk.txt")
    total=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
    posted[$target]=$((posted[$target] + total - ${failed:-0}))
    echo "round $round $target: $rate posts/s, ${failed:-0} not 2xx"
  done
done
# Every fed board, and its partitions together, hold one post per post to
# the family board.
query="SELECT COALESCE(o.id, b.id), CASE WHEN b.partition_of IS NULL THEN 'board' ELSE 'partitions' END, COUNT(*) \
  FROM board_scores s JOIN boards b ON b.number = s.board LEFT JOIN boards o ON o.number = b.partition_of \
  GROUP BY 1, 2 ORDER BY 1, 2"
case "$url" in
  sqlite://*) python3 -c 'import sqlite3, sys; [print(*row) for row in sqlite3.connect(sys.argv[1]).execute(sys.argv[2])]' \
    "${url#sqlite://}" "$query" ;;
  mysql://*) mysql -h"${address%:*}" -P"${address##*:}" -uroot -N "$db" -e "$query" ;;
esac
echo "accepted posts: plain ${posted[plain]}, family ${posted[family]} (each fed to 3 boards and a partition of ${PARTITIONED:-all})"
kill "$server"; wait "$server" 2>/dev/null || true
