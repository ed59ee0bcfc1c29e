#!/usr/bin/env bash
# The "Friends board on the database path" figures in BENCHMARKS.md: a
# release server on MariaDB with Redis configured but unreachable (so the
# boards are read from MariaDB), PLAYERS players (default 500,000; database
# hiscore_friends, dropped and recreated). It times a friends board of the
# 100 bottom players, the same ranks counted the old way (one count from the
# top per player, the statement hiscore ran before) in the same run, and
# registration, a post and /readyz while 50 such friends boards run at once.
# Needs curl and the mysql client; MariaDB on its default port.
set -u
cd "$(dirname "$0")/.."
players=${PLAYERS:-500000}
port=18093
h=http://127.0.0.1:$port
cargo build --release --quiet
mysql -h127.0.0.1 -uroot -e 'DROP DATABASE IF EXISTS hiscore_friends; CREATE DATABASE hiscore_friends'
ADMIN_TOKEN=friends-bench-admin-token-of-32-chars RATE_REGISTER_PER_ADDRESS=0 ./target/release/hiscore serve \
  --bind 127.0.0.1:$port --database-url mysql://root@127.0.0.1:3306/hiscore_friends \
  --redis-url redis://127.0.0.1:1 --static-dir static > "${TMPDIR:-/tmp}/friends-db-path.log" 2>&1 &
server=$!
trap 'kill $server' EXIT
until curl -sf -o /dev/null $h/livez; do sleep 1; done
/usr/bin/time -f "initialize %e s" curl -s -X POST -H 'Authorization: Bearer friends-bench-admin-token-of-32-chars' \
  -H 'Content-Type: application/json' -d "{\"users\":$players,\"scores\":$((players * 2)),\"seed\":1}" \
  $h/api/admin/initialize | head -c 200; echo
total=$(curl -s "$h/api/rankings/best?limit=1" | grep -o '"total_players":[0-9]*' | cut -d: -f2)
ids=$(curl -s "$h/api/rankings/best?limit=100&offset=$((total - 100))" | grep -o '"user":{"id":[0-9]*' | cut -d: -f3 | paste -sd,)
echo "players on the board: $total; friends: the 100 at the bottom"
for i in 1 2 3; do
  curl -s -o /dev/null -w "friends board of the 100 bottom players: %{http_code} in %{time_total} s\n" \
    "$h/api/rankings/best/users?ids=$ids"
done
scores=$(mysql -h127.0.0.1 -uroot -N hiscore_friends -e "SELECT best_score FROM users WHERE id IN ($ids)")
old=$(for s in $scores; do echo "(SELECT COUNT(*) FROM users WHERE banned_at IS NULL AND best_score > $s)"; done | paste -sd,)
start=$(date +%s.%N)
mysql -h127.0.0.1 -uroot hiscore_friends -e "SELECT $old" > /dev/null
echo "the same ranks counted from the top per player (before): $(echo "$(date +%s.%N) - $start" | bc) s"

echo "== 50 friends boards at once, meanwhile:"
for _ in $(seq 50); do curl -s -o /dev/null "$h/api/rankings/best/users?ids=$ids" & done
sleep 0.2
curl -s -o /dev/null -w "  /readyz: %{http_code} in %{time_total} s\n" $h/readyz
register=$(curl -s -w '\n%{http_code} %{time_total}' -X POST $h/api/users -H 'Content-Type: application/json' \
  -d "{\"login_name\": \"friend$RANDOM\", \"password\": \"correct horse battery\"}")
echo "  register: $(echo "$register" | tail -1 | sed 's/ / in /') s"
token=$(echo "$register" | head -1 | grep -o '"token":"[^"]*' | cut -d'"' -f4)
curl -s -o /dev/null -w "  post a score: %{http_code} in %{time_total} s\n" -X POST $h/api/scores \
  -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"score": 5}'
wait_start=$(date +%s.%N)
while [ "$(jobs -r | wc -l)" -gt 1 ]; do sleep 0.1; done
echo "  the 50 friends boards done after $(echo "$(date +%s.%N) - $wait_start" | bc) s more"
