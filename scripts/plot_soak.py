"""Plots soak.csv (seconds, rss_kib, fds, players) as a small self-contained
SVG; a second CSV, if given, is drawn behind it in grey for comparison.

    python3 scripts/plot_soak.py soak.csv out.svg [earlier-soak.csv]
"""
import csv
import sys


def load(path):
    return [(int(r["seconds"]), int(r["rss_kib"]) / 1024, int(r["fds"])) for r in csv.DictReader(open(path))]


rows = load(sys.argv[1])
earlier = load(sys.argv[3]) if len(sys.argv) > 3 else []
width, height, pad = 720, 260, 50
t_max = max(r[0] for r in rows + earlier) or 1
rss_max = max(r[1] for r in rows + earlier) * 1.1
fd_max = max(r[2] for r in rows + earlier) * 1.1


def x(t):
    return pad + (width - 2 * pad) * t / t_max


def y(v, top):
    return height - pad - (height - 2 * pad) * v / top


def line(series, index, top, style):
    points = " ".join(f"{x(r[0]):.1f},{y(r[index], top):.1f}" for r in series)
    return f'<polyline fill="none" {style} points="{points}"/>'


title = "hiscore soak: resident memory (MiB, blue) and open descriptors (orange)"
if earlier:
    title += "; grey: an earlier soak"
svg = f"""<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<rect width="100%" height="100%" fill="white"/>
<text x="{pad}" y="20" font-size="13">{title}</text>
<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#999"/>
<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#999"/>
<text x="4" y="{pad + 4}" fill="#1f77b4">{rss_max:.0f}</text><text x="{width - pad + 4}" y="{pad + 4}" fill="#ff7f0e">{fd_max:.0f}</text>
<text x="{width - pad - 30}" y="{height - pad + 16}">{t_max} s</text><text x="{pad}" y="{height - pad + 16}">0</text>
{line(earlier, 1, rss_max, 'stroke="#aaa" stroke-width="2" stroke-dasharray="5,3"') if earlier else ""}
{line(rows, 1, rss_max, 'stroke="#1f77b4" stroke-width="2"')}
{line(rows, 2, fd_max, 'stroke="#ff7f0e" stroke-width="2"')}
</svg>
"""
open(sys.argv[2], "w").write(svg)
first = [r for r in rows if r[0] >= 60][:3]
last = rows[-3:]
avg = lambda rs, i: sum(r[i] for r in rs) / len(rs)
players = [int(r.get("players") or 0) for r in csv.DictReader(open(sys.argv[1]))]
print(f"rss after warm-up {avg(first, 1):.1f} MiB, at the end {avg(last, 1):.1f} MiB; fds {avg(first, 2):.0f} -> {avg(last, 2):.0f}; players {players[0]} -> {players[-1]}")
