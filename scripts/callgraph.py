#!/usr/bin/env python3
"""callgraph.py: the file-level call graph of a build's object files, and its cycles.

Each object file's external symbols are read with `nm`: a file that leaves a symbol undefined
calls (or reads) the file of the same set that defines it. The strongly connected components
of more than one file are the call cycles: files that cannot be read, tested or changed apart.
Static functions make no edges (they never leave their file).

    scripts/callgraph.py build client scheduler        # cycles among client/ and scheduler/
    scripts/callgraph.py --edges build client          # every edge too
    scripts/callgraph.py --long SRC_DIR client         # functions over 80 lines instead
    scripts/callgraph.py --max-cycles 0 build client   # exit 1 when there are more cycles

--long counts, in the .c files of the folders named, the functions whose body (the line with
the opening brace in column 0 to the line with the closing brace in column 0, both included)
is longer than 80 lines: the tree's style puts a function's braces in column 0 and nothing
else there.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import subprocess
import sys

DEFINED = set("TDBRCGSVW")  # text, data, bss, read-only, common, small data, weak


def object_files(build: pathlib.Path, folders: list[str]) -> dict[str, pathlib.Path]:
    """Maps each source file (folder/name.c) to its object file in the build tree."""
    found: dict[str, pathlib.Path] = {}
    for folder in folders:
        for obj in sorted((build / folder).rglob("*.c.o")):
            found.setdefault(f"{folder}/{obj.name[:-2]}", obj)
    return found


def symbols(obj: pathlib.Path) -> tuple[set[str], set[str]]:
    """The external symbols obj defines and those it leaves undefined."""
    out = subprocess.run(["nm", "-P", str(obj)], check=True, capture_output=True, text=True)
    defined: set[str] = set()
    undefined: set[str] = set()
    for line in out.stdout.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            undefined.add(name)
        elif kind in DEFINED:
            defined.add(name)
    return defined, undefined


def graph(objs: dict[str, pathlib.Path]) -> dict[str, set[str]]:
    """The edges caller -> callee between the files of objs."""
    table = {src: symbols(obj) for src, obj in objs.items()}
    owner: dict[str, str] = {}
    for src, (defined, _) in table.items():
        for name in defined:
            owner.setdefault(name, src)
    edges: dict[str, set[str]] = {src: set() for src in table}
    for src, (_, undefined) in table.items():
        for name in undefined:
            if name in owner and owner[name] != src:
                edges[src].add(owner[name])
    return edges


def components(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    result: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    comp.append(top)
                    if top == node:
                        break
                result.append(sorted(comp))
    return result


def long_functions(src: pathlib.Path, folders: list[str], limit: int) -> list[tuple[str, int, int]]:
    """(file, line, length) of each function whose body is longer than limit lines."""
    found = []
    for folder in folders:
        for path in sorted((src / folder).rglob("*.c")):
            start = None
            for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if re.match(r"\{\s*$", line):
                    start = no
                elif re.match(r"\}", line) and start is not None:
                    if no - start + 1 > limit:
                        found.append((str(path.relative_to(src)), start, no - start + 1))
                    start = None
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("tree", type=pathlib.Path, help="the build folder (--long: the sources)")
    ap.add_argument("folders", nargs="+", help="folders of the tree, e.g. client scheduler")
    ap.add_argument("--edges", action="store_true", help="print every edge too")
    ap.add_argument("--long", action="store_true", help="count functions over --limit lines")
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--max-cycles", type=int, default=-1,
                    help="exit 1 when there are more cycles than this (-1: no limit)")
    args = ap.parse_args()
    if args.long:
        found = long_functions(args.tree, args.folders, args.limit)
        for path, line, length in found:
            print(f"{path}:{line}: {length} lines")
        print(f"{len(found)} functions over {args.limit} lines in {', '.join(args.folders)}")
        return 0
    objs = object_files(args.tree, args.folders)
    if not objs:
        print(f"callgraph.py: no object files under {args.tree} for {args.folders}",
              file=sys.stderr)
        return 2
    edges = graph(objs)
    if args.edges:
        for src in sorted(edges):
            for dst in sorted(edges[src]):
                print(f"{src} -> {dst}")
    cycles = [c for c in components(edges) if len(c) > 1]
    for comp in sorted(cycles, key=len, reverse=True):
        print(f"cycle of {len(comp)} files: {' '.join(comp)}")
    print(f"{len(objs)} files, {sum(map(len, edges.values()))} edges, {len(cycles)} cycles "
          f"({sum(map(len, cycles))} files in them)")
    if 0 <= args.max_cycles < len(cycles):
        print(f"callgraph.py: {len(cycles)} cycles between the files of {', '.join(args.folders)}"
              f" (at most {args.max_cycles}): files that call each other cannot be read or "
              "changed apart; move what both need below them", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
