#!/usr/bin/env python3
"""Lists the cycles among the crate's modules: module A uses module B
(`use crate::b…` or a path `crate::b::…` anywhere in A's files) and B uses A,
directly or through others. Modules are the top-level ones under src/ and,
inside a directory module, its files (`usecases::accounts`); with --top,
only the top-level ones (what `src/` shows a newcomer). Exits 1 if there is
a cycle. Another crate of the workspace: its source directory, e.g.
`bench/src`.

    scripts/module_cycles.py [--top] [SOURCE_DIR]
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = [arg for arg in sys.argv[1:] if not arg.startswith("--")]
ROOT = os.path.join(HERE, SOURCES[0] if SOURCES else "src")
PATH = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)(?:::([a-z_][a-z0-9_]*))?")
GROUP = re.compile(r"\bcrate::([a-z_][a-z0-9_]*)::\{([^}]*)\}")
SUPER = re.compile(r"\bsuper::([a-z_][a-z0-9_]*)")


TOP = "--top" in sys.argv[1:]


def module_of(path):
    """`src/usecases/accounts.rs` → usecases::accounts (usecases with --top);
    `src/rank/mod.rs` → rank."""
    parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return "::".join(parts[: 1 if TOP else 2]) or "crate"


def modules():
    found = {}
    for directory, _, files in os.walk(ROOT):
        for name in files:
            # A `tests.rs` is a module's unit tests (`#[cfg(test)] mod tests;`).
            if name.endswith(".rs") and name != "tests.rs":
                path = os.path.join(directory, name)
                found.setdefault(module_of(path), []).append(path)
    return found


def target(known, first, second):
    """The module a `crate::first::second` path names, at the depth it exists."""
    if second and f"{first}::{second}" in known:
        return f"{first}::{second}"
    return first if first in known else None


def text_without_tests(path):
    text = open(path).read()
    # Unit tests may use anything: they are not the module's dependencies.
    cut = re.search(r"#\[cfg\(test\)\]\s*mod tests", text)
    return text[: cut.start()] if cut else text


def edges(known):
    graph = {module: set() for module in known}
    for module, paths in known.items():
        parent = module.split("::")[0]
        for path in paths:
            text = text_without_tests(path)
            uses = {target(known, a, b) for a, b in PATH.findall(text)}
            for first, names in GROUP.findall(text):
                uses |= {target(known, first, name.strip().split("::")[0]) for name in names.split(",")}
            if "::" in module:  # super:: from a file of a directory module is a sibling
                uses |= {target(known, parent, name) for name in SUPER.findall(text)}
            else:  # from a top-level module, super:: is the crate
                uses |= {target(known, name, None) for name in SUPER.findall(text)}
            graph[module] |= {used for used in uses if used and used != module
                              and not module.startswith(used + "::") and not used.startswith(module + "::")}
    return graph


def cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(10_000)
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def main():
    graph = edges(modules())
    found = cycles(graph)
    for component in found:
        members = set(component)
        links = [f"{a} -> {b}" for a in component for b in sorted(graph[a]) if b in members]
        print(f"cycle: {', '.join(component)}")
        for link in links:
            print(f"  {link}")
    print(f"{len(graph)} modules, {sum(len(v) for v in graph.values())} dependencies, {len(found)} cycles")
    sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
