#!/usr/bin/env bash
# docs_selftest: scripts/check-docs.py fails, naming page, line and reason, on a tree whose
# reference pages (docs/ and its subfolders, outside docs/results/) carry a date, a time of
# day in UTC, a load average or a commit hash, or a link to a missing file or heading, or run
# over the length limit; and passes on a tree that keeps the rules: the same things in a
# result page, a date in a link's #anchor, and format examples marked
# <!-- check-docs: allow --> (on the line, the line before, or before a code fence).
set -euo pipefail
src=${ORDO_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
check="python3 $src/scripts/check-docs.py --root"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$tmp/docs/results" "$tmp/docs/experiments"
printf '# Readme\n\n[how](docs/how.md), [results](docs/results/runs.md)\n' > "$tmp/README.md"
cat > "$tmp/docs/how.md" <<'MD'
# How

Run `tool --json`; it prints one row per size. Measured:
[results](results/runs.md#2026-11-25--the-tool-on-the-vm).

A log line reads `2026-11-25T10:00:00 server 0: up` <!-- check-docs: allow -->

<!-- check-docs: allow -->
```
$ tool --version
tool 1.0 (commit 0c0604c, 2026-11-25 10:00 UTC)
```

Sizes 1048576 and 4194304 bytes are numbers, not hashes; nor is the word `facade`.
MD
printf '# Family\n\nPart of [how](../how.md).\n' > "$tmp/docs/experiments/family.md"
cat > "$tmp/docs/results/runs.md" <<'MD'
# Results

## 2026-11-25 — the tool on the VM

At 10:00 UTC, load average 3.5, commit 0c0604c: 1.2 GB/s.
MD
$check "$tmp" > "$tmp/out" || fail "a clean tree was refused: $(cat "$tmp/out")"
grep -q '4 page(s), 0 problem(s)' "$tmp/out" || fail "clean tree: $(cat "$tmp/out")"

cat >> "$tmp/docs/how.md" <<'MD'

On 2026-11-26 the tool was faster.
The run started at 09:12 UTC.
Figures move with the load average of the machine.
Since a1b2c3d4e5 the default is 1 MiB.

```
tool 1.0 (2026-11-27)
```

See [what](missing.md) and [there](results/runs.md#no-such-heading).
MD
printf '# Family\n\nPart of [how](../how.md), measured 2026-11-28.\n' \
  > "$tmp/docs/experiments/family.md"
for i in $(seq 1 521); do echo "line $i"; done > "$tmp/docs/long.md"
rc=0; $check "$tmp" > "$tmp/out" || rc=$?
[ "$rc" = 1 ] || fail "exit $rc on a tree with problems (want 1): $(cat "$tmp/out")"
want() { grep -qF "$1" "$tmp/out" || fail "not reported: $1
got: $(cat "$tmp/out")"; }
want "docs/how.md:16: a date ('2026-11-26') in a reference page: dated runs go in docs/results/"
want "docs/how.md:17: a time of day ('09:12 UTC') in a reference page"
want "docs/how.md:18: a load average ('load average') in a reference page"
want "docs/how.md:19: a commit hash ('a1b2c3d4e5') in a reference page"
want "docs/how.md:22: a date ('2026-11-27') in a reference page"
want "docs/how.md:25: link to missing.md: no such file"
want "docs/how.md:25: link to results/runs.md#no-such-heading: no heading '#no-such-heading' in docs/results/runs.md"
want "docs/experiments/family.md:3: a date ('2026-11-28') in a reference page"
want "docs/long.md:521: 521 lines, more than 520 for a reference page"
grep -q '5 page(s), 9 problem(s)' "$tmp/out" || fail "wrong count: $(cat "$tmp/out")"
echo "docs_selftest: ok"
