#!/usr/bin/env bash
# The soak run behind RELIABILITY.md: a release server on SQLite under a
# steady `hiscore bench` load for DURATION seconds, its resident memory,
# open descriptors and players on the board sampled every 5 s into
# soak.csv, then plotted into docs/soak.svg. The bench registers at most
# MAX_PLAYERS players, then plays on as earlier ones, so the data stops
# growing and memory can be judged. Not part of CI (too long).
#   DURATION (default 600), CONCURRENCY (default 32), MAX_PLAYERS (default
#   200), OUT (default ./soak-out)
set -euo pipefail
cd "$(dirname "$0")/.."
duration="${DURATION:-600}"
concurrency="${CONCURRENCY:-32}"
max_players="${MAX_PLAYERS:-200}"
out="${OUT:-./soak-out}"
mkdir -p "$out"
cargo build --release --quiet --workspace
rm -rf "$out/data"
ADMIN_TOKEN=soak-admin-token-long-enough-for-hiscore RUST_LOG=warn ./target/release/hiscore serve --bind 127.0.0.1:18090 \
  --database-url "sqlite://$out/data/hiscore.db" --static-dir static > "$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 2
echo "seconds,rss_kib,fds,players" > "$out/soak.csv"
(
  start=$(date +%s)
  while kill -0 $server 2>/dev/null; do
    rss=$(awk '/VmRSS/ {print $2}' /proc/$server/status)
    fds=$(ls /proc/$server/fd | wc -l)
    players=$(curl -s 'http://127.0.0.1:18090/api/rankings/best?limit=1' | grep -o '"total_players":[0-9]*' | cut -d: -f2)
    echo "$(( $(date +%s) - start )),$rss,$fds,${players:-0}" >> "$out/soak.csv"
    sleep 5
  done
) &
sampler=$!
# One load level for the whole run (the step is longer than the run).
./target/release/hiscore bench --target http://127.0.0.1:18090 --admin-token soak-admin-token-long-enough-for-hiscore --duration "$duration" \
  --concurrency "$concurrency" --step-secs $((duration + 60)) --max-players "$max_players" --json "$out/bench.json" > "$out/bench.txt" 2>&1 || true
kill $server; wait $server 2>/dev/null || true
kill $sampler 2>/dev/null || true
python3 scripts/plot_soak.py "$out/soak.csv" docs/soak.svg
python3 scripts/soak_p99.py "$out/bench.json"
tail -3 "$out/bench.txt"
