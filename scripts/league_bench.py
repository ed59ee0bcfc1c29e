#!/usr/bin/env python3
"""A league of 100,000 members on one instance, embedded (SQLite) or on
MariaDB (`MYSQL=1`: the machine's server, database `league_bench`,
recreated): the figures of BENCHMARKS.md's "Leagues" section.

1. Cohort pages: `wrk --latency` on one cohort's page (30 players) and on
   a member's answer (their cohort, entry and history), with 100,000
   players placed in the period: p50 and p99.
2. The close: the period ends (a reset every 2 minutes), the closing job
   makes the moves of all 100,000 members in one transaction; its time is
   read from the log (`league moves made ... millis`), and every placement
   is checked to carry its move afterwards.

Players come from initialize; their entries, placements and cohorts are
written straight into the database as the score writer and the placement
would leave them (100,000 posts through the API would take minutes).

    cargo build --release && scripts/league_bench.py
    cargo build --release && MYSQL=1 scripts/league_bench.py
Needs wrk. Takes three to five minutes (the league starts just after an
even minute, so the pages are measured well before its close).
"""
import json
import os
import random
import re
import sqlite3
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# HISCORE_BINARY: another build to compare (alternate runs of the two).
BINARY = os.environ.get("HISCORE_BINARY") or os.path.join(ROOT, "target", "release", "hiscore")
PORT = 18094
ADMIN = "league-bench-admin-token-long-enough"
BASE = f"http://127.0.0.1:{PORT}"
MEMBERS = 100_000
TIERS = ["Bronze", "Silver", "Gold", "Sapphire", "Ruby"]
COHORT = 30
MYSQL = os.environ.get("MYSQL") == "1"
MYSQL_DATABASE = "league_bench"


class Database:
    """The bench's own writes and reads, on SQLite (a file) or on MariaDB
    (through the `mysql` client: values are integers or NULL only)."""

    def __init__(self, path):
        self.path = path

    def url(self):
        return f"mysql://root@127.0.0.1:3306/{MYSQL_DATABASE}" if MYSQL else f"sqlite://{self.path}"

    def recreate(self):
        if MYSQL:
            self.mysql(f"DROP DATABASE IF EXISTS {MYSQL_DATABASE}; CREATE DATABASE {MYSQL_DATABASE}", database="")

    def mysql(self, script, database=MYSQL_DATABASE):
        command = ["mysql", "-h127.0.0.1", "-uroot", "-N", "-B"] + ([database] if database else [])
        done = subprocess.run(command, input=script, capture_output=True, text=True, check=True)
        return [line.split("\t") for line in done.stdout.splitlines()]

    def executemany(self, sql, rows):
        if not MYSQL:
            connection = sqlite3.connect(self.path, timeout=60)
            connection.executemany(sql, rows)
            connection.commit()
            connection.close()
            return
        head = sql[: sql.index("VALUES")] + "VALUES "
        literal = lambda value: "NULL" if value is None else str(int(value))
        batches = []
        for start in range(0, len(rows), 2_000):
            values = ",".join("(" + ",".join(map(literal, row)) + ")" for row in rows[start:start + 2_000])
            batches.append(head + values + ";")
        self.mysql("\n".join(batches))

    def query(self, sql, params=()):
        if not MYSQL:
            connection = sqlite3.connect(self.path, timeout=60)
            rows = connection.execute(sql, params).fetchall()
            connection.close()
            return rows
        for value in params:
            sql = sql.replace("?", str(int(value)), 1)
        return [tuple(int(v) if v.lstrip("-").isdigit() else v for v in row) for row in self.mysql(sql + ";")]


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(BASE + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {ADMIN}")
    if data:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read() or b"null")


def start(db):
    log = open(db.path + ".log", "w")
    env = dict(os.environ, ADMIN_TOKEN=ADMIN, RUST_LOG="info,hiscore::usecases::closings=debug", NO_COLOR="1")
    server = subprocess.Popen(
        [BINARY, "serve", "--bind", f"127.0.0.1:{PORT}", "--database-url", db.url(), "--static-dir", "/none"],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    for _ in range(3000):
        try:
            urllib.request.urlopen(BASE + "/healthz", timeout=1)
            return server
        except Exception:
            time.sleep(0.1)
    raise SystemExit("the server did not come up")


def fill(db, board, period):
    """Every member placed in the period, in cohorts of COHORT per tier,
    each with an entry."""
    rng = random.Random(7)
    entries, placements, members = [], [], []
    cohorts = {}
    for user in range(1, MEMBERS + 1):
        tier = rng.randrange(len(TIERS))
        seq = cohorts.get(tier, (1, 0))
        seq = (seq[0] + 1, 1) if seq[1] == COHORT else (seq[0], seq[1] + 1)
        cohorts[tier] = seq
        score = rng.randrange(0, 10_000)
        at = 1_796_000_000_000 + user
        entries.append((board, period, user, score, -score, at, user, None, 1, 1))
        placements.append((board, period, user, tier, seq[0], at))
        members.append((board, user, tier))
    db.executemany(
        "INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, metadata, plays, "
        "version) VALUES (?,?,?,?,?,?,?,?,?,?)", entries)
    db.executemany(
        "INSERT INTO league_placements (board, period, user_id, tier, cohort, placed_at) VALUES (?,?,?,?,?,?)",
        placements)
    db.executemany("INSERT INTO league_members (board, user_id, tier) VALUES (?,?,?)", members)
    counts = {}
    for (_, _, _, tier, seq, _) in placements:
        counts[(tier, seq)] = counts.get((tier, seq), 0) + 1
    db.executemany(
        "INSERT INTO league_cohorts (board, period, tier, seq, members) VALUES (?,?,?,?,?)",
        [(board, period, tier, seq, n) for (tier, seq), n in counts.items()])
    db.query("UPDATE board_periods SET players = ? WHERE board = ? AND period = ?", (MEMBERS, board, period))


def parse_time(text):
    """Seconds since the epoch of an RFC 3339 UTC time (any fraction)."""
    whole, _, fraction = text.rstrip("Z").partition(".")
    seconds = time.mktime(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) - time.timezone
    return seconds + float("0." + (fraction or "0"))


def wrk(path):
    out = subprocess.run(["wrk", "-t2", "-c16", "-d8s", "--latency", BASE + path], capture_output=True, text=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M).group(1)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M).group(1)
    return f"{rate:,.0f} req/s, p50 {p50}, p99 {p99}"


def main():
    work = tempfile.mkdtemp(prefix="league-bench-")
    db = Database(os.path.join(work, "league.db"))
    db.recreate()
    server = start(db)
    try:
        call("POST", "/api/admin/initialize", {"users": MEMBERS, "scores": 0, "seed": 3})
        # The league's first period runs from just after a firing to the
        # next, so the page figures are taken well before its close.
        time.sleep(120 - time.time() % 120 + 1)
        league = call("POST", "/api/admin/leagues", {
            "id": "big", "name": "Big", "tiers": TIERS, "cohort_size": COHORT, "promote": 7, "demote": 5,
            "reset": "0 */2 * * * *"})
        period = league["period"]["index"]
        ((board,),) = db.query("SELECT number FROM boards WHERE id = 'big'")
        started = time.time()
        fill(db, board, period)
        where = "MariaDB" if MYSQL else "SQLite"
        print(f"placed {MEMBERS:,} members in {time.time() - started:.1f} s (straight into {where})")
        end = league["period"]["end"]
        print("cohort page (30 players):", wrk(f"/api/leagues/big/cohorts/{period}-2-100"))
        print("member (cohort, entry, history):", wrk("/api/leagues/big/members/54321"))
        print("league (tier stats over 100,000 placements):", wrk("/api/leagues/big"))
        print(f"waiting for the period to end at {end} ...")
        deadline = time.time() + 200
        text = ""
        while time.time() < deadline:
            text = open(db.path + ".log").read()
            if "league moves made" in text:
                break
            time.sleep(1)
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        found = re.search(r"league moves made.*?millis=(\d+)", text)
        read = re.search(r"read_ms=(\d+)", text)
        print("  of which reading the members:", read.group(1) if read else "?", "ms")
        print("close: moves of", f"{MEMBERS:,}", "members made in", found.group(1) if found else "?", "ms")
        made = re.search(r"^(\S+Z)\s+INFO league moves made", text, re.M)
        if made:
            after = parse_time(made.group(1)) - parse_time(end)
            print(f"  made (and the league.closed event committed) {after:.2f} s after the period's end")
        # In a closed period, a placement without a movement stayed.
        ((closed,),) = db.query(
            "SELECT COUNT(*) FROM board_periods WHERE board = ? AND period = ? AND closed_at IS NOT NULL",
            (board, period))
        moves = db.query(
            "SELECT COALESCE(movement, 'stay'), COUNT(*) FROM league_placements WHERE board = ? AND period = ? "
            "GROUP BY COALESCE(movement, 'stay')", (board, period))
        print(f"period closed: {closed == 1}; moves {dict(moves)}")
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    main()
