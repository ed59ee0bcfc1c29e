#!/usr/bin/env python3
"""Fails on a broken link in the README and the book: every relative
markdown link (outside code) must name a file that exists, and its
`#anchor` a heading of that file (slugs as GitHub and mdBook make them).
Usage: python3 .ci/links.py  (from anywhere; prints each broken link)."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ["README.md", "BENCHMARKS.md", "RELIABILITY.md"] + sorted(
    os.path.join("docs", name) for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md")
)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def prose(text):
    """The text outside fenced blocks and inline code."""
    text = re.sub(r"^\s*```.*?^\s*```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading):
    heading = re.sub(r"`", "", heading.strip().lower())
    return re.sub(r"[^a-z0-9 _-]", "", heading).replace(" ", "-")


def read(path):
    """The page as mdBook renders it: `{{#include FILE[:FROM[:TO]]}}` or
    `{{#include FILE:NAME}}` replaced by those lines of FILE, or its part
    named NAME (links in them then resolve from here)."""

    def include(match):
        file, _, lines = match.group(1).partition(":")
        text = open(os.path.join(os.path.dirname(path), file), encoding="utf-8").read().split("\n")
        if lines and not re.fullmatch(r"[0-9:]*", lines):
            # A named part: between `ANCHOR: name` and `ANCHOR_END: name`.
            begin = next(i for i, line in enumerate(text) if re.search(rf"ANCHOR:\s*{lines}\b", line))
            end = next(i for i, line in enumerate(text) if re.search(rf"ANCHOR_END:\s*{lines}\b", line))
            return "\n".join(line for line in text[begin + 1 : end] if "ANCHOR" not in line)
        start, _, end = lines.partition(":")
        return "\n".join(text[int(start or 1) - 1 : int(end) if end else None])

    return re.sub(r"\{\{#include ([^}]+)\}\}", include, open(path, encoding="utf-8").read())


def anchors(path):
    text = re.sub(r"^\s*```.*?^\s*```", "", read(path), flags=re.S | re.M)
    return {slug(match) for match in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


broken = []
for page in PAGES:
    path = os.path.join(ROOT, page)
    for target in LINK.findall(prose(read(path))):
        if re.match(r"^[a-z]+:", target):
            continue
        file, _, anchor = target.partition("#")
        resolved = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
        if not os.path.exists(resolved):
            broken.append(f"{page}: {target} (no {os.path.relpath(resolved, ROOT)})")
        elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
            broken.append(f"{page}: {target} (no heading #{anchor})")
for line in broken:
    print(line)
print(f"{len(PAGES)} pages, {len(broken)} broken links", file=sys.stderr)
sys.exit(1 if broken else 0)
