#!/usr/bin/env python3
"""What idle live pages cost: opens STREAMS live pages of the best board's
top page on a running hiscore, then measures the server's resident memory
growth and its CPU while nothing changes, then posts one score and times
how long until every stream has the new page. BENCHMARKS.md "Live pages"
holds the figures.

    hiscore serve --live-per-address 100000 --live-max 100000 &
    STREAMS=10000 scripts/live_idle.py http://127.0.0.1:8080 <server pid>

Needs `ulimit -n` above STREAMS for both sides.
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
HOST, PORT = BASE.removeprefix("http://").split(":")


def resident_kib():
    for line in open(f"/proc/{PID}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def cpu_seconds():
    fields = open(f"/proc/{PID}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def call(method, path, body=None, token=None):
    request = urllib.request.Request(BASE + path, method=method, data=json.dumps(body).encode() if body else None)
    request.add_header("content-type", "application/json")
    if token:
        request.add_header("authorization", f"Bearer {token}")
    with urllib.request.urlopen(request) as response:
        return json.load(response)


async def open_stream():
    reader, writer = await asyncio.open_connection(HOST, int(PORT))
    writer.write(f"GET /api/rankings/best/live?limit=10 HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    await writer.drain()
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
    for start in range(0, STREAMS, 500):
        streams += await asyncio.gather(*(open_stream() for _ in range(min(500, STREAMS - start))))
    await asyncio.sleep(2)
    rss_open = resident_kib()
    cpu_start, wall_start = cpu_seconds(), time.monotonic()
    await asyncio.sleep(IDLE_SECONDS)
    idle_cpu = (cpu_seconds() - cpu_start) / (time.monotonic() - wall_start)
    waits = [asyncio.create_task(next_page(reader)) for reader, _ in streams]
    posted = time.monotonic()
    call("POST", "/api/scores", {"score": 123456}, player["token"])
    arrived = sorted(t - posted for t in await asyncio.gather(*waits))
    watchers = [line for line in urllib.request.urlopen(BASE + "/metrics").read().decode().splitlines()
                if line.startswith("hiscore_live_")]
    print(f"streams={STREAMS} resident before={rss_before / 1024:.1f} MiB open={rss_open / 1024:.1f} MiB "
          f"growth={(rss_open - rss_before) / 1024:.1f} MiB ({(rss_open - rss_before) * 1024 / STREAMS:.0f} B a stream)")
    print(f"idle CPU over {IDLE_SECONDS:.0f} s: {idle_cpu * 100:.2f}% of one core")
    print(f"one post -> new page at every stream: p50 {arrived[len(arrived) // 2] * 1000:.0f} ms, "
          f"p99 {arrived[int(len(arrived) * 0.99)] * 1000:.0f} ms, last {arrived[-1] * 1000:.0f} ms")
    print(" ".join(watchers))
    for _, writer in streams:
        writer.close()


asyncio.run(main())
