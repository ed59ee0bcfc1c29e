#!/usr/bin/env bash
# Runs the README's and the book's commands as a reader would, each
# documented way to run started and probed: the blocks marked
# `<!-- ci: NAME -->` are taken from README.md and docs/*.md as they are
# written (so a command the binary refuses, like a setting it does not
# parse, fails here). Runs in a clone of the checkout
# (its own ./data), sharing the build in ./target. Needs MariaDB and Redis
# (the multi-instance recipe), nginx and curl; ports 8080, 8081 and 8000.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d -t hiscore-readme.XXXXXX)"
git clone -q "$repo" "$work/repo"
# The README's commands name ./target: the clone's is the build's own.
target="${CARGO_TARGET_DIR:-$repo/target}"
mkdir -p "$target"
ln -s "$target" "$work/repo/target"
unset CARGO_TARGET_DIR
cd "$work/repo"

# The pages whose shell blocks are run: the README and the book's.
pages="README.md $(ls docs/*.md | tr '\n' ' ')"

# The text of the block marked `<!-- ci: NAME ... -->` in any of the pages
# (its fence's indent removed).
block() {
  python3 - "$1" $pages <<'PY'
import re, sys
name = sys.argv[1]
for page in sys.argv[2:]:
    lines = open(page).read().splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*<!-- ci: " + re.escape(name) + r"[ >]", line):
            fence = lines[i + 1]
            indent = len(fence) - len(fence.lstrip())
            body = []
            for text in lines[i + 2:]:
                if text.strip() == "```":
                    print("\n".join(body))
                    sys.exit(0)
                body.append(text[indent:])
sys.exit(f"no page has a block marked ci: {name}")
PY
}

# Every shell block is run here (`<!-- ci: NAME -->`) or says why not
# (`<!-- not run: … -->`): a new command cannot go unchecked by accident.
python3 - $pages <<'PY'
import re, sys
unmarked = []
for page in sys.argv[1:]:
    lines = open(page).read().splitlines()
    for i, line in enumerate(lines):
        if line.strip() == "```sh" and not (i and re.match(r"\s*<!-- (ci|not run[^:]*): ", lines[i - 1])):
            unmarked.append(f"{page}:{i + 1}")
if unmarked:
    sys.exit("shell blocks neither run nor marked `<!-- not run: why -->`: " + ", ".join(unmarked))
PY

pids=()
stop_all() {
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  pids=()
}
trap 'stop_all; rm -rf "$work"' EXIT

# Runs a script in the background in a process group of its own.
start() {
  setsid bash -c "$1" > "$work/$2.log" 2>&1 &
  pids+=("$!")
}

# Waits until URL answers 2xx, for at most $3 seconds (default 60; the
# first start includes the release build).
probe() {
  local url=$1 what=$2 limit=${3:-60}
  for _ in $(seq 1 "$limit"); do
    if curl -sf -o /dev/null "$url"; then echo "ok: $what answers $url"; return 0; fi
    sleep 1
  done
  echo "FATAL: $what never answered $url; its output:" >&2
  tail -n 50 "$work"/*.log >&2
  return 1
}

echo "== way 1: the first of the two commands, then the curl quickstart"
commands=$(block two-commands)
start "${commands%%$'\n'*}" embedded
probe http://127.0.0.1:8080/readyz "cargo run --release" 1800
bash -euo pipefail -c "$(block quickstart)" > "$work/quickstart.out"
grep -q '"rank":1' "$work/quickstart.out" || { echo "FATAL: the quickstart showed no ranked entry" >&2; cat "$work/quickstart.out" >&2; exit 1; }

echo "== backup and restore (embedded): alice is in the backup, bob only after it"
bash -euo pipefail -c "$(block backup-sqlite)"
curl -sf -X POST http://127.0.0.1:8080/api/users -H 'Content-Type: application/json' \
  -d '{"login_name": "bob_after_backup", "password": "correct horse battery"}' > /dev/null
stop_all
start "$(block restore-sqlite)" restored
probe http://127.0.0.1:8080/readyz "the restored service" 600
restored=$(curl -sf "http://127.0.0.1:8080/api/rankings/best?limit=100")
grep -q '"alice"' <<< "$restored" || { echo "FATAL: the restore lost alice: $restored" >&2; exit 1; }
curl -sf -X POST http://127.0.0.1:8080/api/sessions -H 'Content-Type: application/json' \
  -d '{"login_name": "bob_after_backup", "password": "correct horse battery"}' > /dev/null \
  && { echo "FATAL: the restore kept a player registered after the backup" >&2; exit 1; }
echo "ok: the restored service has what the backup had, and nothing after it"
stop_all

echo "== the demo data: restart with an admin token and initialize; then a custom board"
# alice registers again (initialize wiped her) for the custom board's post.
start "$(printf '%s\necho\n' 'H=http://127.0.0.1:8080' "$(block initialize)" "$(block quickstart)" "$(block custom-boards)" "$(block feeds)" "$(block subscores)" "$(block partitions)" "$(block rewards)" "$(block operator)" "$(block console)" "$(block percentiles)" 'echo custom-boards-done')" initialize
for _ in $(seq 1 300); do grep -q 'custom-boards-done' "$work/initialize.log" && break; sleep 1; done
grep -q '"users":1000' "$work/initialize.log" || { echo "FATAL: initialize did not answer:" >&2; cat "$work/initialize.log" >&2; exit 1; }
echo "ok: initialize loaded 1000 players"
grep -qE '"board":"level-3","period":\{[^}]*\},"partition":null,"entries":\[\{"rank":1' "$work/initialize.log" || { echo "FATAL: the custom board shows no ranked entry:" >&2; cat "$work/initialize.log" >&2; exit 1; }
echo "ok: the custom board was created, posted to and read"
grep -qE '"feeds":\[\{"board":"level-3-daily","status":"accepted"' "$work/initialize.log" || { echo "FATAL: the fed boards did not take the post:" >&2; cat "$work/initialize.log" >&2; exit 1; }
echo "ok: a post landed on the boards its board feeds"
grep -qE '"entry":\{"rank":1,"top_percent":100,"score":300,"subscores":\[12,95000\]' "$work/initialize.log" || { echo "FATAL: the subscore board did not rank the post:" >&2; cat "$work/initialize.log" >&2; exit 1; }
echo "ok: a post carried its subscores onto a subscore board"
grep -qE '"partition":\{"value":"DE","entry":\{"rank":1,' "$work/initialize.log" || { echo "FATAL: the partitioned board did not rank the post in its partition:" >&2; cat "$work/initialize.log" >&2; exit 1; }
grep -qE '"partitions":\[\{"value":"DE","players":1\}\]' "$work/initialize.log" || { echo "FATAL: the partitions list did not show the partition:" >&2; exit 1; }
echo "ok: a post landed on its partition, listed with its players"
grep -qi "content-security-policy: default-src 'self'; object-src 'none'; frame-ancestors 'none'" "$work/initialize.log" || { echo "FATAL: the console was not served with its policy:" >&2; exit 1; }
echo "ok: the console is served with its security policy"
grep -qE '"cutoffs":\[\{"percent":1,"position":[0-9]+,"rank":[0-9]+' "$work/initialize.log" || { echo "FATAL: the cut-offs did not answer:" >&2; exit 1; }
echo "ok: the cut-offs of the demo board"
grep -qE '"rewards":\[\{"ranks":\[1,3\],"reward":\{"gems":100\}\}' "$work/initialize.log" || { echo "FATAL: the rewarding board was not made:" >&2; cat "$work/initialize.log" >&2; exit 1; }
grep -q '"rewards":\[\],"next_after":null' "$work/initialize.log" || { echo "FATAL: the player's reward list did not answer:" >&2; cat "$work/initialize.log" >&2; exit 1; }
echo "ok: a board with rewards was made and the player's rewards listed"
grep -q '"action":"ban"' "$work/initialize.log" || { echo "FATAL: the operator's guide left no ban in the audit log:" >&2; cat "$work/initialize.log" >&2; exit 1; }
echo "ok: the operator's guide ran (a ban in the audit log)"
stop_all

echo "== the bench, as the README runs it (5 s instead of 60)"
start "$(block bench | sed 's/--duration 60/--duration 5/'); echo bench-done" bench
for _ in $(seq 1 300); do grep -q 'bench-done' "$work/bench.log" && break; sleep 1; done
grep -q '^score: [0-9]* pass' "$work/bench.log" || { echo "FATAL: the README's bench run did not pass:" >&2; tail -n 40 "$work/bench.log" >&2; exit 1; }
echo "ok: the README's bench run passed"
stop_all

echo "== on MariaDB"
start "$(block mariadb)" mariadb
probe http://127.0.0.1:8080/readyz "the service on MariaDB"
stop_all

echo "== way 2: one instance behind the local nginx"
start "$(block nginx-one)" nginx-one
probe http://127.0.0.1:8000/healthz "nginx in front of one instance"
probe "http://127.0.0.1:8000/api/rankings/best?limit=3" "a ranking page through nginx"
stop_all

echo "== way 2: two instances on MariaDB and Redis behind the local nginx"
start "$(block nginx-many)" nginx-many
probe http://127.0.0.1:8000/healthz "nginx in front of two instances"
for port in 8080 8081; do probe "http://127.0.0.1:$port/readyz" "the instance on $port"; done
stop_all
echo "README commands: all ran"
