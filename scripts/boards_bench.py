#!/usr/bin/env python3
"""Custom boards at size, on one embedded (SQLite) instance: the figures of
BENCHMARKS.md's "Custom boards" section.

1. Memory and warm-up: a database with 1,000 boards of 5 players each, then
   one with a board of 1,000,000 players; each started fresh, its resident
   set compared with an empty database's, and its warm-up time read from
   the log.
2. Reads: the top page, the page at offset 500,000 and a deep "around me"
   on the 1M board (the in-process index), and the same reads of an ended
   period of 100,000 players (always read from the database's index).

Entries are written straight into SQLite (a million posts through the API
would take minutes); boards and periods are created through the API.

    cargo build --release && scripts/boards_bench.py
Needs wrk. Takes a few minutes.
"""
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, "target", "release", "hiscore")
PORT = 18093
ADMIN = "boards-bench-admin-token-long-enough"
BASE = f"http://127.0.0.1:{PORT}"


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(BASE + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {ADMIN}")
    if data:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read() or b"null")


def start(db, database_url=None, extra=()):
    """The release server on the SQLite file `db` (or on `database_url`,
    logging beside `db`), with `extra` arguments."""
    log = open(db + ".log", "w")
    env = dict(os.environ, ADMIN_TOKEN=ADMIN, RUST_LOG="info", NO_COLOR="1")
    url = database_url or f"sqlite://{db}"
    server = subprocess.Popen(
        [BINARY, "serve", "--bind", f"127.0.0.1:{PORT}", "--database-url", url, "--static-dir", "/none", *extra],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    for _ in range(3000):
        try:
            urllib.request.urlopen(BASE + "/healthz", timeout=1)
            break
        except Exception:
            time.sleep(0.1)
    time.sleep(1)  # let the allocator settle
    return server


def rss_kib(server):
    with open(f"/proc/{server.pid}/status") as status:
        return int(re.search(r"VmRSS:\s+(\d+)", status.read()).group(1))


def warm_up_ms(db):
    text = re.sub(r"\x1b\[[0-9;]*m", "", open(db + ".log").read())
    found = re.search(r"rank engine warmed up entries=(\d+) millis=(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else (None, None)


def stop(server):
    server.terminate()
    server.wait()


def fill(db, board, period, players, seed):
    """`players` entries on a board period, as the score writer leaves them."""
    rng = random.Random(seed)
    connection = sqlite3.connect(db)
    # The columns later migrations added (hidden, changed) keep their defaults.
    insert = ("INSERT INTO board_entries (board, period, user_id, score, rank_score, achieved_at, post_id, "
              "metadata, plays, version) VALUES (?,?,?,?,?,?,?,?,?,?)")
    rows = []
    for user in range(1, players + 1):
        score = rng.randrange(0, 1_000_000) // 10 * 10
        at = 1_796_000_000_000 + rng.randrange(0, 100_000_000)
        rows.append((board, period, user, score, -score, at, user, None, 1, 1))
        if len(rows) == 50_000:
            connection.executemany(insert, rows)
            rows = []
    connection.executemany(insert, rows)
    connection.execute("UPDATE board_periods SET players = ? WHERE board = ? AND period = ?", (players, board, period))
    connection.commit()
    connection.close()


def number_of(db, board_id):
    connection = sqlite3.connect(db)
    (number,) = connection.execute("SELECT number FROM boards WHERE id = ?", (board_id,)).fetchone()
    connection.close()
    return number


def wrk(path):
    out = subprocess.run(["wrk", "-t2", "-c16", "-d6s", BASE + path], capture_output=True, text=True).stdout
    rate = re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)
    latency = re.search(r"Latency\s+(\S+)", out).group(1)
    return f"{float(rate):,.0f} req/s (mean {latency})"


def first_requests(template, count=40):
    """Median time of requests that no cache has seen: each asks a new offset."""
    times = []
    for i in range(count):
        path = template.format(offset=50_000 + i * 7)
        started = time.perf_counter()
        urllib.request.urlopen(BASE + path, timeout=60).read()
        times.append(time.perf_counter() - started)
    times.sort()
    return f"median {times[len(times) // 2] * 1000:.1f} ms over {count} different offsets"


def main():
    if not os.path.exists(BINARY):
        sys.exit("build first: cargo build --release")
    work = tempfile.mkdtemp()

    # An empty database: the baseline resident set.
    empty = os.path.join(work, "empty.db")
    server = start(empty)
    baseline = rss_kib(server)
    stop(server)
    print(f"empty database: {baseline:,} KiB resident")

    # 1,000 boards of 5 players each.
    many = os.path.join(work, "many.db")
    server = start(many)
    for i in range(1000):
        call("POST", "/api/admin/boards", {"id": f"level-{i:04d}", "name": f"Level {i}", "order": "asc" if i % 2 else "desc"})
    stop(server)
    for i in range(1000):
        fill(many, number_of(many, f"level-{i:04d}"), 0, 5, i)
    server = start(many)
    rss = rss_kib(server)
    entries, millis = warm_up_ms(many)
    stop(server)
    print(f"1,000 boards x 5 players: {rss:,} KiB resident, {(rss - baseline) * 1024 / 1000:,.0f} bytes per board "
          f"(with its 5 entries); warm-up {millis} ms for {entries} entries")

    # One board of 1,000,000 players, and an ended period of 100,000.
    big = os.path.join(work, "big.db")
    server = start(big)
    call("POST", "/api/admin/boards", {"id": "big", "name": "Big"})
    call("POST", "/api/admin/boards", {"id": "weekly", "name": "Weekly", "reset": "*/2 * * * * *", "archive_periods": 1000})
    time.sleep(3)  # period 0 of the weekly board has ended
    stop(server)
    fill(big, number_of(big, "big"), 0, 1_000_000, 1)
    fill(big, number_of(big, "weekly"), 0, 100_000, 2)
    server = start(big)
    rss = rss_kib(server)
    entries, millis = warm_up_ms(big)
    print(f"1,000,000-player board: {rss:,} KiB resident, {(rss - baseline) * 1024 / 1_000_000:,.0f} bytes per entry; "
          f"warm-up {millis} ms for {entries} entries")
    print("current period (in-process index):")
    for label, path in [("top page", "/api/rankings/big?limit=10"),
                        ("page at offset 500,000", "/api/rankings/big?limit=10&offset=500000"),
                        ("around player 777777", "/api/rankings/big/around/777777")]:
        print(f"  {label}: {wrk(path)}")
    print("ended period of 100,000 players (database):")
    for label, path in [("top page", "/api/rankings/weekly?limit=10&period=0"),
                        ("page at offset 50,000", "/api/rankings/weekly?limit=10&offset=50000&period=0"),
                        ("around player 77777", "/api/rankings/weekly/around/77777?period=0")]:
        print(f"  {label}: {wrk(path)}")
    print("  first request of a page (uncached): "
          + first_requests("/api/rankings/weekly?limit=10&offset={offset}&period=0"))
    print("  same, current period of the 1M board: "
          + first_requests("/api/rankings/big?limit=10&offset={offset}"))
    stop(server)


if __name__ == "__main__":
    main()
