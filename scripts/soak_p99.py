"""Per-minute latency of a soak from the bench's JSON timeline: for each
minute, the median and the worst of the per-second p99s (ms).

    python3 scripts/soak_p99.py soak-out/bench.json
"""
import json
import statistics
import sys

timeline = json.load(open(sys.argv[1]))["timeline"]
print("minute  requests/s  p99 median ms  p99 worst ms")
for start in range(0, len(timeline), 60):
    window = [s for s in timeline[start:start + 60] if s["requests"] > 0]
    if not window:
        continue
    p99s = [s["p99_ms"] for s in window]
    rate = sum(s["requests"] for s in window) / len(window)
    print(f"{start // 60:>6}  {rate:>10.0f}  {statistics.median(p99s):>13.2f}  {max(p99s):>12.2f}")
