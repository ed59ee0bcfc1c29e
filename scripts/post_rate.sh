#!/usr/bin/env bash
# Group-commit throughput: 64 players posting scores from 64 connections
# for 10 s (`wrk -t2 -c64 -d10s` with a Lua script rotating their bearer
# tokens), against each binary given, on the database given, one after the
# other in the same run, then a check that the log and the aggregates agree.
#   scripts/post_rate.sh DATABASE_URL BINARY [BINARY…]
# DATABASE_URL: sqlite:///tmp/x.db or mysql://root@127.0.0.1:3306/hiscore_gc
# (a MySQL database is dropped and recreated for each binary). Needs wrk.
set -eu
url=$1; shift
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
for binary in "$@"; do
  case "$url" in
    sqlite://*) rm -f "${url#sqlite://}"* ;;
    mysql://*)
      db=${url##*/}; address=${url#*@}; address=${address%%/*}
      mysql -h"${address%:*}" -P"${address##*:}" -uroot -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db" ;;
  esac
  RUST_LOG=warn BCRYPT_COST=4 RATE_POSTS_PER_PLAYER=0 RATE_REGISTER_PER_ADDRESS=0 STATIC_DIR=/nonexistent \
    "$binary" serve --bind 127.0.0.1:18092 --database-url "$url" > "$work/server.log" 2>&1 &
  server=$!
  for _ in $(seq 1 100); do curl -fsS 127.0.0.1:18092/healthz >/dev/null 2>&1 && break; sleep 0.1; done
  tokens=(); ids=()
  for i in $(seq 1 64); do
    registered=$(curl -fsS -XPOST 127.0.0.1:18092/api/users -H 'content-type: application/json' \
      -d "{\"login_name\":\"poster$i\",\"password\":\"poster-password\"}")
    tokens+=("$(echo "$registered" | sed 's/.*"token":"\([^"]*\)".*/\1/')")
    # Ids need not be 1, 2, 3… (a Galera cluster steps them by its size).
    ids+=("$(echo "$registered" | sed 's/.*"user":{"id":\([0-9]*\).*/\1/')")
  done
  {
    echo "tokens = {"; for t in "${tokens[@]}"; do echo "  \"$t\","; done; echo "}"
    cat <<'LUA'
counter = 0
request = function()
  counter = counter + 1
  local headers = {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. tokens[(counter % #tokens) + 1]}
  return wrk.format("POST", "/api/scores", headers, '{"score": ' .. (counter % 1000) .. '}')
end
LUA
  } > "$work/post.lua"
  wrk -t2 -c64 -d10s -s "$work/post.lua" http://127.0.0.1:18092 > "$work/wrk.txt"
  rate=$(awk '/Requests\/sec/ {print $2}' "$work/wrk.txt")
  failed=$(awk '/Non-2xx/ {print $5}' "$work/wrk.txt")
  plays=0
  for id in "${ids[@]}"; do
    plays=$((plays + $(curl -fsS "127.0.0.1:18092/api/users/$id" | sed 's/.*"play_count":\([0-9]*\).*/\1/')))
  done
  kill "$server"; wait "$server" 2>/dev/null || true
  echo "$binary: $rate posts/s, ${failed:-0} not 2xx, $plays plays on the players' rows"
done
