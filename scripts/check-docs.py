#!/usr/bin/env python3
"""check-docs: every relative link in README.md and docs/**/*.md resolves, and reference pages
stay short and undated.

For each markdown link or image `[text](target)` whose target is not a URL, the file it names
(relative to the page) must exist; a `#anchor` on a markdown target must match one of that
page's headings (GitHub's slugs). Reference pages (docs/**/*.md outside docs/results/) must
not exceed MAX_LINES lines, and say how, not when: a date (YYYY-MM-DD), a time of day in UTC,
a load average or a commit hash (7 to 40 hex digits, at least one a letter and one a digit)
in one is refused; measured, dated runs go in docs/results/. Link targets are not read for
this (a link to a dated entry's #anchor is fine). A legitimate occurrence, such as a format
example, is allowed by ALLOW on the same line or on the line before; on the line before a
code fence it allows the whole fenced block. Prints one line per problem as FILE:LINE: reason
and exits 1 if there is any; `--root DIR` checks another tree (the self-test uses it).
"""
import os
import re
import sys

MAX_LINES = 520
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*```")
ALLOW = "<!-- check-docs: allow -->"
DATED = [
    ("a date", re.compile(r"\b\d{4}-[01]\d-[0-3]\d\b")),
    ("a time of day", re.compile(r"\b[0-2]?\d:[0-5]\d(?::[0-5]\d)?\s*UTC\b")),
    ("a load average", re.compile(r"\bload\s+(?:average|avg)\b|\bloadavg\b", re.IGNORECASE)),
    ("a commit hash", re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,40}\b")),
]
LINK_TARGET = re.compile(r"\]\([^)\s]*(?:\s+\"[^\"]*\")?\)")


def slug(heading):
    s = heading.strip().lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors(path, cache):
    if path not in cache:
        seen = {}
        out = set()
        in_fence = False
        with open(path, encoding="utf-8") as f:
            for line in f:
                if FENCE.match(line):
                    in_fence = not in_fence
                    continue
                m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if m and not in_fence:
                    base = slug(m.group(1))
                    n = seen.get(base, 0)
                    seen[base] = n + 1
                    out.add(base if n == 0 else f"{base}-{n}")
        cache[path] = out
    return cache[path]


def pages(root):
    found = []
    if os.path.exists(os.path.join(root, "README.md")):
        found.append("README.md")
    for d, _, files in os.walk(os.path.join(root, "docs")):
        for name in files:
            if name.endswith(".md"):
                found.append(os.path.relpath(os.path.join(d, name), root))
    return sorted(found)


def dated(page, lines):
    """Problems for dates, times of day, load averages and commit hashes in a reference page."""
    problems = []
    in_fence = False
    fence_allowed = False
    for i, line in enumerate(lines, 1):
        allowed = ALLOW in line or (i > 1 and ALLOW in lines[i - 2])
        if FENCE.match(line):
            in_fence = not in_fence
            fence_allowed = in_fence and allowed
            continue
        if allowed or (in_fence and fence_allowed):
            continue
        text = LINK_TARGET.sub("]()", line)
        for what, pattern in DATED:
            m = pattern.search(text)
            if m:
                problems.append(f"{page}:{i}: {what} ('{m.group(0)}') in a reference page: "
                                f"dated runs go in docs/results/ (a format example: {ALLOW})")
    return problems


def check(root):
    problems = []
    cache = {}
    for page in pages(root):
        path = os.path.join(root, page)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        n = len(lines) - (1 if lines and lines[-1] == "" else 0)
        is_results = page.startswith(os.path.join("docs", "results") + os.sep)
        if page.startswith("docs" + os.sep) and not is_results and n > MAX_LINES:
            problems.append(f"{page}:{n}: {n} lines, more than {MAX_LINES} for a reference page "
                            "(move measured results to docs/results/)")
        if page.startswith("docs" + os.sep) and not is_results:
            problems.extend(dated(page, lines))
        in_fence = False
        for i, line in enumerate(lines, 1):
            if FENCE.match(line):
                in_fence = not in_fence
                continue
            if in_fence:
                continue
            for m in LINK.finditer(re.sub(r"`[^`]*`", "``", line)):
                target = m.group(1)
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("//"):
                    continue
                file_part, _, anchor = target.partition("#")
                dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) \
                    if file_part else path
                if not os.path.exists(dest):
                    problems.append(f"{page}:{i}: link to {target}: no such file")
                    continue
                if anchor and dest.endswith(".md") and anchor not in anchors(dest, cache):
                    problems.append(f"{page}:{i}: link to {target}: no heading '#{anchor}' in "
                                    f"{os.path.relpath(dest, root)}")
    return problems


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    if len(argv) == 3 and argv[1] == "--root":
        root = argv[2]
    elif len(argv) != 1:
        print("usage: check-docs.py [--root DIR]", file=sys.stderr)
        return 2
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    n_pages = len(pages(os.path.abspath(root)))
    print(f"check-docs: {n_pages} page(s), {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
