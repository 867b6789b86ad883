#!/usr/bin/env python3
"""check-layering: fail when a source file includes a header of a layer above its own, of
another role folder, or a header that is not for it.

The layers, bottom up (docs/architecture.md, "Layers"):

    common  <  core  <  planner  <  client  <  scheduler | server | worker  <  tools

A file may include headers of its own folder and of folders of a lower layer; the three role
folders share a layer and never include each other. Two more rules keep the surfaces honest:
worker/ (ordo-worker) reaches libordo (client/) only through the public API, include/ordo/,
like any program outside the tree; and a header named *_internal.h is included only from
its own folder. The public headers (include/ordo/) may include only each other and system
headers: they are all a program outside the tree sees. Tests, examples and the Python
package are outside the rule.

A consistency model ([sync]: bsp, bsp with backup workers, ssp, asp) is one table of
operations in server/consistency/ (server/consistency/model.h), and its rows are all the rest of
server/ knows of it: code in server/ outside server/consistency/ that tests the mode (compares
against an ORDO_SYNC_ constant or a sync_mode, tests backup workers by their count, or names a
model's row, as in `model == &ordo__sync_asp`) is a violation too; it asks the model's table
instead.

Usage: check-layering.py [ROOT]   (ROOT: the repository, default: this script's parent's
parent). Prints one line per violation, "path:line: reason", and exits 1 if there is any.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

RANK = {"common": 0, "core": 1, "planner": 2, "client": 3, "scheduler": 4, "server": 4,
        "worker": 4, "tools": 5}
ROLE = 4
# folders that reach another only through include/ordo/: {user: library}
PUBLIC_ONLY = {"worker": "client"}
SOURCES = (".c", ".h", ".cu")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# a test of the consistency mode: a comparison with an ORDO_SYNC_ constant or a sync_mode, a
# case of one, backup workers told by their count, or a model's own row or helper named (only
# the table's type and its lookup, ordo__sync_model(_t) and ordo__sync_model_of, are for all)
MODE_TEST = re.compile(r"(==|!=|<=?|>=?)\s*ORDO_SYNC_\w+|\bORDO_SYNC_\w+\s*(==|!=|<=?|>=?)"
                       r"|\bcase\s+ORDO_SYNC_|\bsync_mode\b\s*(\([^)]*\))?\s*(==|!=)"
                       r"|\bbackup\s*(>|!=|==)\s*0|\bordo__sync_(?!model\b|model_t\b|model_of\b)\w+")
MODELS = ("server", "consistency")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def mode_tests_of(root: Path, path: Path) -> list[str]:
    """mode_tests_of returns the tests of the consistency mode in a server/ file outside
    server/consistency/, comments left out."""
    rel = path.relative_to(root)
    if rel.parts[0] != "server" or rel.parts[:2] == MODELS:
        return []
    code = COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), path.read_text(errors="replace"))
    return [f"{rel}:{no}: a test of the consistency mode ({m.group(0).strip()}) outside "
            "server/consistency/: ask the model's table (server/consistency/model.h)"
            for no, line in enumerate(code.splitlines(), 1) if (m := MODE_TEST.search(line))]


def violations_of(root: Path, path: Path) -> list[str]:
    """violations_of returns the layering violations of one source file under root."""
    rel = path.relative_to(root)
    folder = rel.parts[0]
    public = rel.parts[:2] == ("include", "ordo")
    found = []
    for no, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        m = INCLUDE.match(line)
        if not m:
            continue
        target = m.group(1)
        where = f"{rel}:{no}"
        head = target.split("/", 1)[0] if "/" in target else None
        if public:
            if head != "ordo":
                found.append(f'{where}: public header includes "{target}": include/ordo/ may '
                             "include only ordo/ headers and system headers")
            continue
        if target.endswith("_internal.h") and head not in (None, folder):
            found.append(f'{where}: {folder}/ includes "{target}": an *_internal.h is for its '
                         "own folder only; give what others need a header of its own")
            continue
        if head is None:
            if not (path.parent / target).exists():
                found.append(f'{where}: "{target}" is not in {folder}/; name its folder '
                             '("FOLDER/name.h")')
            continue
        if head == "ordo":
            continue  # the public API: every layer may implement or use it
        if PUBLIC_ONLY.get(folder) == head:
            found.append(f'{where}: {folder}/ includes "{target}": {folder}/ reaches {head}/ only '
                         "through the public API (include/ordo/)")
        elif head not in RANK:
            found.append(f'{where}: "{target}" is in no layer ({", ".join(RANK)})')
        elif head != folder and RANK[head] >= RANK[folder]:
            kind = "another role folder" if RANK[head] == RANK[folder] == ROLE else "a higher layer"
            found.append(f'{where}: {folder}/ includes "{target}" of {kind} '
                         f"({folder} is layer {RANK[folder]}, {head} is layer {RANK[head]})")
    return found


def main(argv: list[str]) -> int:
    root = Path(argv[1]) if len(argv) > 1 else Path(__file__).resolve().parent.parent
    if not root.is_dir():
        print(f"check-layering: {root}: not a directory", file=sys.stderr)
        return 2
    checked = 0
    found: list[str] = []
    for folder in [*RANK, "include"]:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if path.suffix in SOURCES and path.is_file():
                checked += 1
                found += violations_of(root, path) + mode_tests_of(root, path)
    for line in found:
        print(line)
    print(f"check-layering: {checked} files, {len(found)} violations")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
