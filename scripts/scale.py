#!/usr/bin/env python3
"""A studio at scale, on one embedded (SQLite) instance: the figures of
BENCHMARKS.md's "Scale: 10M players and 1,000 boards".

PLAYERS players (default 10,000,000) on the built-in boards, 1,000 custom
boards of 100 players each with ids spread over all of them, and one
resetting board whose ended period 0 holds 1,000,000 entries. Reports the
resident set, warm-up time, the time to write the ended period's final
standings, and latencies (wrk, p50/p99) of pages, around and friends boards
on the built-in board, a small custom board and the ended period (read from
its final standings, then counted over its index for comparison).

Rows are written straight into SQLite (ten million posts through the API
would take hours); boards and periods are created through the API.

    cargo build --release && scripts/scale.py          # PLAYERS=1000000 for a quick run
Needs wrk. Takes about ten minutes at 10M.
"""
import os
import random
import re
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from boards_bench import BASE, BINARY, call, fill, number_of, rss_kib, start, stop, warm_up_ms  # noqa: E402

PLAYERS = int(os.environ.get("PLAYERS", "10000000"))
BOARDS = 1_000
PER_BOARD = 100
ENDED_ENTRIES = 1_000_000


def fill_players(db, players, seed):
    """`players` users who have each played, as the score writer leaves them."""
    rng = random.Random(seed)
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA synchronous = OFF")
    columns = ("id, login_name, login_key, display_name, password_hash, best_score, best_at, "
               "total_score, play_count, created_at, version")
    rows = []
    for user in range(1, players + 1):
        best = rng.randrange(0, 1_000_000)
        at = 1_796_000_000_000 + rng.randrange(0, 100_000_000)
        name = f"p{user}"
        rows.append((user, name, name, name, "x", best, at, best * 3, 3, at, 3))
        if len(rows) == 100_000:
            connection.executemany(f"INSERT INTO users ({columns}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
            rows = []
    connection.executemany(f"INSERT INTO users ({columns}) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)
    connection.execute("UPDATE board_stats SET players = ? WHERE id = 1", (players,))
    connection.commit()
    connection.close()


def fill_sparse(db, board, players, seed):
    """`players` entries whose ids are drawn from all of the players."""
    rng = random.Random(seed)
    ids = rng.sample(range(1, PLAYERS + 1), players)
    connection = sqlite3.connect(db)
    columns = "board, period, user_id, score, rank_score, achieved_at, post_id, metadata, plays, version"
    rows = []
    for user in ids:
        score = rng.randrange(0, 1_000_000)
        rows.append((board, 0, user, score, -score, 1_796_000_000_000 + user, user, None, 1, 1))
    connection.executemany(f"INSERT INTO board_entries ({columns}) VALUES (?,?,?,?,?,?,?,?,?,?)", rows)
    connection.execute("UPDATE board_periods SET players = ? WHERE board = ? AND period = 0", (players, board))
    connection.commit()
    connection.close()
    return ids


def latency(path, seconds=5):
    out = subprocess.run(["wrk", "-t2", "-c8", f"-d{seconds}s", "--latency", BASE + path],
                         capture_output=True, text=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"50%\s+(\S+)", out).group(1)
    p99 = re.search(r"99%\s+(\S+)", out).group(1)
    return f"p50 {p50}, p99 {p99} ({rate:,.0f} req/s at 8 connections)"


def main():
    if not os.path.exists(BINARY):
        sys.exit("build first: cargo build --release")
    db = os.path.join(tempfile.mkdtemp(), "scale.db")
    server = start(db)
    baseline = rss_kib(server)
    for i in range(BOARDS):
        call("POST", "/api/admin/boards", {"id": f"level-{i:04d}", "name": f"Level {i}"})
    call("POST", "/api/admin/boards", {"id": "weekly", "name": "Weekly", "reset": "*/2 * * * * *", "archive_periods": 1000})
    time.sleep(3)  # period 0 of the weekly board has ended
    stop(server)
    started = time.time()
    fill_players(db, PLAYERS, 1)
    board_ids = {}
    for i in range(BOARDS):
        board_ids[i] = fill_sparse(db, number_of(db, f"level-{i:04d}"), PER_BOARD, 100 + i)
    weekly = number_of(db, "weekly")
    fill(db, weekly, 0, ENDED_ENTRIES, 2)
    # Rows written straight into the database move no change count: the
    # standings the service wrote for the empty period would still hold.
    execute(db, "UPDATE board_periods SET standings_changes = NULL WHERE board = ?", (weekly,))
    print(f"loaded {PLAYERS:,} players, {BOARDS:,} boards x {PER_BOARD}, an ended period of {ENDED_ENTRIES:,} "
          f"in {time.time() - started:.0f} s")

    server = start(db)
    rss = rss_kib(server)
    entries, millis = warm_up_ms(db)
    print(f"resident set: {rss / 1024:,.0f} MiB ({(rss - baseline) * 1024 / entries:,.0f} bytes per entry over an "
          f"empty database); warm-up {millis / 1000:.1f} s for {entries:,} entries")
    started = time.time()
    while not execute(db, "SELECT 1 FROM board_periods WHERE board = ? AND period = 0 "
                          "AND standings_changes = changes", (weekly,)):
        time.sleep(0.5)
    print(f"final standings of the ended period written in {time.time() - started:.1f} s after the warm-up")
    page = call("GET", f"/api/rankings/best?limit=100&offset={PLAYERS - 100}")
    bottom = ",".join(str(entry["user"]["id"]) for entry in page["entries"])
    ended_page = call("GET", f"/api/rankings/weekly?limit=100&offset={ENDED_ENTRIES - 100}&period=0")
    ended_bottom = ",".join(str(entry["user"]["id"]) for entry in ended_page["entries"])
    middle = page["entries"][0]["user"]["id"]
    level = ",".join(str(user) for user in board_ids[7])
    for label, path in [
        ("best: top page", "/api/rankings/best?limit=10"),
        (f"best: page at offset {PLAYERS // 2:,}", f"/api/rankings/best?limit=10&offset={PLAYERS // 2}"),
        ("best: around a bottom player", f"/api/rankings/best/around/{middle}"),
        ("best: friends board of the 100 bottom players", f"/api/rankings/best/users?ids={bottom}"),
        ("a 100-player board: top page", "/api/rankings/level-0007?limit=10"),
        ("a 100-player board: friends board of all 100", f"/api/rankings/level-0007/users?ids={level}"),
        ("ended period of 1M: top page", "/api/rankings/weekly?limit=10&period=0"),
        ("ended period of 1M: page at offset 500,000", "/api/rankings/weekly?limit=10&offset=500000&period=0"),
        ("ended period of 1M: around player 777,777", "/api/rankings/weekly/around/777777?period=0"),
        ("ended period of 1M: friends board of the 100 bottom", f"/api/rankings/weekly/users?ids={ended_bottom}&period=0"),
    ]:
        print(f"  {label}: {latency(path)}")
    # The same ended-period reads counted over the index, as before the
    # standings: they no longer hold (a change), and a claim from now keeps
    # every instance from writing them again during the measurement.
    execute(db, "UPDATE board_periods SET changes = changes + 1, standings_claimed_at = ? WHERE board = ?",
            (int(time.time() * 1000), weekly))
    for label, path in [
        ("ended period of 1M, counted: around player 777,777", "/api/rankings/weekly/around/777777?period=0"),
        ("ended period of 1M, counted: friends board of the 100 bottom",
         f"/api/rankings/weekly/users?ids={ended_bottom}&period=0"),
    ]:
        print(f"  {label}: {latency(path)}")
    stop(server)


def execute(db, sql, binds):
    """One statement on the service's database, committed; its rows."""
    connection = sqlite3.connect(db, timeout=30)
    rows = connection.execute(sql, binds).fetchall()
    connection.commit()
    connection.close()
    return rows


if __name__ == "__main__":
    main()
