#!/usr/bin/env python3
"""What idle live pages cost: opens STREAMS live pages on a running hiscore,
then measures the server's resident memory growth, its CPU and its live
reads while nothing changes, then posts one score and times how long
until every stream has the new page. BENCHMARKS.md "Live pages" holds the
figures.

    hiscore serve --live-per-address 100000 --live-max 100000 &
    STREAMS=10000 scripts/live_idle.py http://127.0.0.1:8080 <server pid>

POST_TO=<another instance's URL> makes the post there (the delivery
across instances, with Redis). AROUND=1 watches instead the around-me
window of players 1..STREAMS (each a watcher of its own; initialize the
data first) and skips the post. BATCH (500) streams are opened at once.
Needs `ulimit -n` above STREAMS for both
sides.
"""
import asyncio
import json
import os
import sys
import time
import urllib.request

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
PID = int(sys.argv[2])
STREAMS = int(os.environ.get("STREAMS", "10000"))
IDLE_SECONDS = float(os.environ.get("IDLE_SECONDS", "20"))
POST_TO = os.environ.get("POST_TO", BASE)
AROUND = os.environ.get("AROUND") == "1"
BATCH = int(os.environ.get("BATCH", "500"))  # streams opened at once
HOST, PORT = BASE.removeprefix("http://").split(":")


def resident_kib():
    for line in open(f"/proc/{PID}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds():
    fields = open(f"/proc/{PID}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def live_reads():
    """`hiscore_live_reads_total` by what was read."""
    text = urllib.request.urlopen(BASE + "/metrics").read().decode()
    prefix = 'hiscore_live_reads_total{what="'
    return {line[len(prefix):].split('"')[0]: float(line.split()[-1]) for line in text.splitlines()
            if line.startswith(prefix)}


def call(method, path, body=None, token=None):
    request = urllib.request.Request(POST_TO + path, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(request) as response:
        return json.load(response)


async def open_stream(n):
    path = f"/api/rankings/best/around/{n + 1}/live?radius=5" if AROUND else "/api/rankings/best/live?limit=10"
    reader, writer = await asyncio.open_connection(HOST, int(PORT))
    writer.write(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    await writer.drain()
    if AROUND and not (await reader.readline()).startswith(b"HTTP/1.1 200"):
        writer.close()  # a generated player without a score: not on the board
        return None
    await reader.readuntil(b"event: page")  # the first page
    await reader.readuntil(b"\n\n")
    return reader, writer


async def next_page(reader):
    while True:
        block = await reader.readuntil(b"\n\n")
        if b"event: page" in block:
            return time.monotonic()


async def main():
    player = call("POST", "/api/users", {"login_name": f"live{int(time.time())}", "password": "live idle test"})
    rss_before = resident_kib()
    streams = []
    for start in range(0, STREAMS, BATCH):
        opened = await asyncio.gather(*(open_stream(n) for n in range(start, min(start + BATCH, STREAMS))))
        streams += [stream for stream in opened if stream]
    await asyncio.sleep(2)
    rss_open = resident_kib()
    reads_start, cpu_start, wall_start = live_reads(), cpu_seconds(), time.monotonic()
    await asyncio.sleep(IDLE_SECONDS)
    idle_cpu = (cpu_seconds() - cpu_start) / (time.monotonic() - wall_start)
    idle_reads = {what: (n - reads_start[what]) / (time.monotonic() - wall_start) for what, n in live_reads().items()}
    print(f"streams={len(streams)} {'around-me windows' if AROUND else 'top page'} resident before={rss_before / 1024:.1f} MiB "
          f"open={rss_open / 1024:.1f} MiB growth={(rss_open - rss_before) / 1024:.1f} MiB "
          f"({(rss_open - rss_before) * 1024 / len(streams):.0f} B a stream)")
    print(f"idle CPU over {IDLE_SECONDS:.0f} s: {idle_cpu * 100:.2f}% of one core; live reads a second while idle: "
          + ", ".join(f"{what} {rate:.1f}" for what, rate in sorted(idle_reads.items())))
    if not AROUND:
        waits = [asyncio.create_task(next_page(reader)) for reader, _ in streams]
        posted = time.monotonic()
        call("POST", "/api/scores", {"score": 123456}, player["token"])
        arrived = sorted(t - posted for t in await asyncio.gather(*waits))
        where = "another instance" if POST_TO != BASE else "the same instance"
        print(f"one post on {where} -> new page at every stream: p50 {arrived[len(arrived) // 2] * 1000:.0f} ms, "
              f"p99 {arrived[int(len(arrived) * 0.99)] * 1000:.0f} ms, last {arrived[-1] * 1000:.0f} ms")
    gauges = [line for line in urllib.request.urlopen(BASE + "/metrics").read().decode().splitlines()
              if line.startswith(("hiscore_live_streams", "hiscore_live_watchers"))]
    print(" ".join(gauges))
    for _, writer in streams:
        writer.close()


asyncio.run(main())
