#!/usr/bin/env python3
"""What live pages of an ended period cost while nothing changes: opens
STREAMS live pages of one ended period (distinct questions: limits 1..100
and offsets, so each is a watcher of its own) on a running hiscore with an
admin token, then counts the database statements and the live reads the
server makes over IDLE_SECONDS. BENCHMARKS.md "Live pages" holds the
figures (issue 39).

    hiscore serve --admin-token … --live-per-address 100000 --live-max 100000 &
    ADMIN_TOKEN=… STREAMS=1000 scripts/live_ended.py http://127.0.0.1:8080
"""
import asyncio
import json
import os
import sys
import time
import urllib.request

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
ADMIN = os.environ["ADMIN_TOKEN"]
STREAMS = int(os.environ.get("STREAMS", "1000"))
IDLE_SECONDS = float(os.environ.get("IDLE_SECONDS", "10"))
HOST, PORT = BASE.removeprefix("http://").split(":")


def call(method, path, body=None, token=None):
    request = urllib.request.Request(BASE + path, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(request) as response:
        text = response.read()
    return json.loads(text) if text else None


def metrics():
    text = urllib.request.urlopen(BASE + "/metrics").read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith(("hiscore_db_statements_total ", "hiscore_db_job_statements_total ", "hiscore_live_reads_total")):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


async def open_stream(path, opened):
    while True:
        reader, writer = await asyncio.open_connection(HOST, int(PORT))
        writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nAccept: text/event-stream\r\n\r\n".encode())
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        if b" 200 " in head.split(b"\r\n")[0]:
            break
        # A 503 while a thousand first pages are read at once: again, later.
        writer.close()
        await asyncio.sleep(1)
    await reader.readuntil(b"\n\n")  # the first page
    opened.append(writer)
    while await reader.read(65536):
        pass


async def main():
    call("POST", "/api/admin/boards", {"id": "ended", "name": "Ended", "reset": "*/3 * * * * *", "archive_periods": 100},
         ADMIN)
    players = [call("POST", "/api/users", {"login_name": f"ended{n}_{int(time.time())}", "password": "ended-period-pw"})
               for n in range(50)]
    periods = {call("POST", "/api/boards/ended/scores", {"score": n}, p["token"])["period"]["index"]
               for n, p in enumerate(players)}
    period = max(periods)
    time.sleep(4.5)  # the period ends and closes
    opened, tasks = [], []
    for n in range(STREAMS):
        path = f"/api/rankings/ended/live?period={period}&limit={n % 100 + 1}&offset={n // 100}"
        tasks.append(asyncio.create_task(open_stream(path, opened)))
        if n % 200 == 199:
            await asyncio.sleep(0.5)
    deadline = time.time() + 240
    while len(opened) < STREAMS and time.time() < deadline:
        await asyncio.sleep(0.2)
    print(f"{len(opened)} streams open", file=sys.stderr)
    await asyncio.sleep(2)
    before, started = metrics(), time.time()
    await asyncio.sleep(IDLE_SECONDS)
    after, seconds = metrics(), time.time() - started
    rate = lambda name: (after.get(name, 0) - before.get(name, 0)) / seconds
    print(json.dumps({
        "streams": len(opened),
        "idle_seconds": round(seconds, 1),
        "db_statements_per_s": round(rate("hiscore_db_statements_total"), 1),
        "db_job_statements_per_s": round(rate("hiscore_db_job_statements_total"), 1),
        "live_page_reads_per_s": round(rate('hiscore_live_reads_total{what="page"}'), 1),
        "live_stamp_reads_per_s": round(rate('hiscore_live_reads_total{what="stamp"}'), 1),
    }))
    for writer in opened:
        writer.close()
    for task in tasks:
        task.cancel()


asyncio.run(main())
