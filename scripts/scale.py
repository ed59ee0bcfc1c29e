#!/usr/bin/env python3
"""A studio at scale, on one instance: the figures of BENCHMARKS.md's
"Scale: 10M players and 1,000 boards".

PLAYERS players (default 10,000,000) on the built-in boards, 1,000 custom
boards of 100 players each with ids spread over all of them, and one
resetting board whose ended period 0 holds 1,000,000 entries. Reports the
resident set, warm-up time, the time to write the ended period's final
standings, and latencies (wrk, p50/p99) of pages, around and friends boards
on the built-in board, a small custom board and the ended period (read from
its final standings, then counted over its index for comparison).

By default on the embedded SQLite database. With SHARED=1, on MariaDB
(127.0.0.1:3306 as root, database `hiscore_scale`, dropped first) and Redis
(127.0.0.1:6379, database 3, flushed first): the warm-up is then the
rebuild of the boards in Redis, and Redis's memory per entry is reported.

Rows are written straight into the database (ten million posts through
the API would take hours); boards and periods are created through the API.

    cargo build --release && scripts/scale.py     # PLAYERS=1000000 for a quick run
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
from boards_bench import BASE, BINARY, call, rss_kib, start, stop, warm_up_ms  # noqa: E402

PLAYERS = int(os.environ.get("PLAYERS", "10000000"))
SHARED = os.environ.get("SHARED", "0") in ("1", "true", "yes", "on")
BOARDS = 1_000
PER_BOARD = 100
ENDED_ENTRIES = 1_000_000
ROWS_PER_WRITE = 100_000
USER_COLUMNS = ("id", "login_name", "login_key", "display_name", "password_hash", "best_score", "best_at",
                "total_score", "play_count", "created_at", "version")
ENTRY_COLUMNS = ("board", "period", "user_id", "score", "rank_score", "achieved_at", "post_id", "metadata", "plays",
                 "version")


class Sqlite:
    """The embedded database: a file the script writes with sqlite3."""

    def __init__(self, work):
        self.path = os.path.join(work, "scale.db")
        self.url = None

    def execute(self, sql, binds=()):
        connection = sqlite3.connect(self.path, timeout=30)
        rows = connection.execute(sql, binds).fetchall()
        connection.commit()
        connection.close()
        return rows

    def insert(self, table, columns, rows):
        connection = sqlite3.connect(self.path, timeout=30)
        connection.execute("PRAGMA synchronous = OFF")
        marks = ",".join("?" * len(columns))
        connection.executemany(f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})", rows)
        connection.commit()
        connection.close()


class MariaDb:
    """MariaDB through the `mysql` client: LOAD DATA for rows."""

    NAME = "hiscore_scale"

    def __init__(self, work):
        self.path = os.path.join(work, "mariadb")  # where the server's log goes
        self.url = f"mysql://root@127.0.0.1:3306/{self.NAME}"
        self.work = work
        subprocess.run(["mysql", "-uroot", "-h127.0.0.1", "-e",
                        f"DROP DATABASE IF EXISTS {self.NAME}; CREATE DATABASE {self.NAME}"], check=True)

    def execute(self, sql, binds=()):
        for value in binds:
            sql = sql.replace("?", str(int(value)), 1)
        out = subprocess.run(["mysql", "-uroot", "-h127.0.0.1", "-N", "-B", self.NAME, "-e", sql],
                             capture_output=True, text=True, check=True).stdout
        return [tuple(line.split("\t")) for line in out.splitlines()]

    def insert(self, table, columns, rows):
        data = os.path.join(self.work, "rows.tsv")
        with open(data, "w") as out:
            for row in rows:
                out.write("\t".join("\\N" if value is None else str(value) for value in row) + "\n")
        subprocess.run(["mysql", "--local-infile=1", "-uroot", "-h127.0.0.1", self.NAME, "-e",
                        f"LOAD DATA LOCAL INFILE '{data}' INTO TABLE {table} ({', '.join(columns)})"], check=True)
        os.remove(data)


def in_batches(database, table, columns, rows):
    batch = []
    for row in rows:
        batch.append(row)
        if len(batch) == ROWS_PER_WRITE:
            database.insert(table, columns, batch)
            batch = []
    if batch:
        database.insert(table, columns, batch)


def fill_players(database, players, seed):
    """`players` users who have each played, as the score writer leaves them."""
    rng = random.Random(seed)

    def rows():
        for user in range(1, players + 1):
            best = rng.randrange(0, 1_000_000)
            at = 1_796_000_000_000 + rng.randrange(0, 100_000_000)
            name = f"p{user}"
            yield (user, name, name, name, "x", best, at, best * 3, 3, at, 3)

    in_batches(database, "users", USER_COLUMNS, rows())
    database.execute("UPDATE board_stats SET players = ? WHERE id = 1", (players,))


def fill_entries(database, board, ids, seed, tied=False):
    """An entry for each of `ids` in period 0 of `board`, as the score writer
    leaves them (`tied`: scores in steps of ten, so ties abound)."""
    rng = random.Random(seed)

    def rows():
        for user in ids:
            score = rng.randrange(0, 1_000_000)
            score = score // 10 * 10 if tied else score
            at = 1_796_000_000_000 + rng.randrange(0, 100_000_000)
            yield (board, 0, user, score, -score, at, user, None, 1, 1)

    in_batches(database, "board_entries", ENTRY_COLUMNS, rows())
    database.execute("UPDATE board_periods SET players = ? WHERE board = ? AND period = 0", (len(ids), board))


def number_of(database, board_id):
    return int(database.execute(f"SELECT number FROM boards WHERE id = '{board_id}'")[0][0])


def latency(path, seconds=5):
    out = subprocess.run(["wrk", "-t2", "-c8", f"-d{seconds}s", "--latency", BASE + path],
                         capture_output=True, text=True).stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p50 = re.search(r"\n\s+50%\s+(\S+)", out).group(1)
    p99 = re.search(r"\n\s+99%\s+(\S+)", out).group(1)
    return f"p50 {p50}, p99 {p99} ({rate:,.0f} req/s at 8 connections)"


def redis(*command):
    return subprocess.run(["redis-cli", "-n", "3", *command], capture_output=True, text=True, check=True).stdout


def redis_used_memory():
    return int(re.search(r"used_memory:(\d+)", redis("INFO", "memory")).group(1))


def main():
    if not os.path.exists(BINARY):
        sys.exit("build first: cargo build --release")
    work = tempfile.mkdtemp()
    database = MariaDb(work) if SHARED else Sqlite(work)
    extra = ("--redis-url", "redis://127.0.0.1:6379/3") if SHARED else ()

    def serve():
        return start(database.path, database.url, extra)

    if SHARED:
        redis("FLUSHDB")
    server = serve()
    baseline = rss_kib(server)
    redis_baseline = redis_used_memory() if SHARED else 0
    for i in range(BOARDS):
        call("POST", "/api/admin/boards", {"id": f"level-{i:04d}", "name": f"Level {i}"})
    call("POST", "/api/admin/boards", {"id": "weekly", "name": "Weekly", "reset": "*/2 * * * * *", "archive_periods": 1000})
    time.sleep(3)  # period 0 of the weekly board has ended
    stop(server)
    started = time.time()
    fill_players(database, PLAYERS, 1)
    board_ids = {}
    for i in range(BOARDS):
        ids = random.Random(100 + i).sample(range(1, PLAYERS + 1), PER_BOARD)
        fill_entries(database, number_of(database, f"level-{i:04d}"), ids, 100 + i)
        board_ids[i] = ids
    weekly = number_of(database, "weekly")
    fill_entries(database, weekly, range(1, ENDED_ENTRIES + 1), 2, tied=True)
    # Rows written straight into the database move no change count: the
    # standings the service wrote for the empty period would still hold.
    database.execute("UPDATE board_periods SET standings_changes = NULL WHERE board = ?", (weekly,))
    print(f"loaded {PLAYERS:,} players, {BOARDS:,} boards x {PER_BOARD}, an ended period of {ENDED_ENTRIES:,} "
          f"in {time.time() - started:.0f} s ({'MariaDB + Redis' if SHARED else 'embedded SQLite'})")

    if SHARED:
        redis("FLUSHDB")  # the boards are rebuilt from the database at start
    server = serve()
    rss = rss_kib(server)
    entries, millis = warm_up_ms(database.path)
    print(f"resident set: {rss / 1024:,.0f} MiB ({(rss - baseline) * 1024 / entries:,.0f} bytes per entry over an "
          f"empty database); warm-up {millis / 1000:.1f} s for {entries:,} entries")
    if SHARED:
        used = redis_used_memory()
        print(f"Redis: {used / 2**20:,.0f} MiB used, {(used - redis_baseline) / entries:,.0f} bytes per entry")
    started = time.time()
    while not database.execute("SELECT 1 FROM board_periods WHERE board = ? AND period = 0 "
                               "AND standings_changes = changes", (weekly,)):
        time.sleep(0.5)
    print(f"final standings of the ended period written in {time.time() - started:.1f} s after the warm-up")
    page = call("GET", f"/api/rankings/best?limit=100&offset={PLAYERS - 100}")
    bottom = ",".join(str(entry["user"]["id"]) for entry in page["entries"])
    ended_page = call("GET", f"/api/rankings/weekly?limit=100&offset={ENDED_ENTRIES - 100}&period=0")
    ended_bottom = ",".join(str(entry["user"]["id"]) for entry in ended_page["entries"])
    middle = page["entries"][0]["user"]["id"]
    level = ",".join(str(user) for user in board_ids[7])
    ended_reads = [
        ("around player 777,777", "/api/rankings/weekly/around/777777?period=0"),
        ("friends board of the 100 bottom", f"/api/rankings/weekly/users?ids={ended_bottom}&period=0"),
    ]
    for label, path in [
        ("best: top page", "/api/rankings/best?limit=10"),
        (f"best: page at offset {PLAYERS // 2:,}", f"/api/rankings/best?limit=10&offset={PLAYERS // 2}"),
        ("best: around a bottom player", f"/api/rankings/best/around/{middle}"),
        ("best: friends board of the 100 bottom players", f"/api/rankings/best/users?ids={bottom}"),
        ("a 100-player board: top page", "/api/rankings/level-0007?limit=10"),
        ("a 100-player board: friends board of all 100", f"/api/rankings/level-0007/users?ids={level}"),
        ("ended period of 1M: top page", "/api/rankings/weekly?limit=10&period=0"),
        ("ended period of 1M: page at offset 500,000", "/api/rankings/weekly?limit=10&offset=500000&period=0"),
    ] + [(f"ended period of 1M: {label}", path) for label, path in ended_reads]:
        print(f"  {label}: {latency(path)}")
    # The same ended-period reads counted over the index, as before the
    # standings: they no longer hold (a change), and a claim from now keeps
    # every instance from writing them again during the measurement.
    database.execute("UPDATE board_periods SET changes = changes + 1, standings_claimed_at = ? WHERE board = ?",
                     (int(time.time() * 1000), weekly))
    for label, path in ended_reads:
        print(f"  ended period of 1M, counted: {label}: {latency(path)}")
    stop(server)


if __name__ == "__main__":
    main()
