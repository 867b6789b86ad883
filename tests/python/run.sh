#!/usr/bin/env bash
# run.sh: the Python binding's tests (pytest, tests/python) in the repository's .venv, made by
# scripts/setup-python.sh (scripts/test.sh runs it). Skips (exit 77) when there is no .venv,
# and when pytest ran none of the selected tests: all skipped (torch missing, no root, ...)
# or none collected; pytest's reasons stay in the log (-rs) and the SKIP line gives the first.
set -uo pipefail
src=${ORDO_SOURCE_DIR:?}
py=$src/.venv/bin/python
if [ ! -x "$py" ] || ! "$py" -c 'import pytest' 2>/dev/null; then
  echo "SKIP: no .venv with pytest at $src/.venv (make it with scripts/setup-python.sh)"
  exit 77
fi
export PYTHONPATH=$src/python${PYTHONPATH:+:$PYTHONPATH}
export ORDO_LIBRARY=${ORDO_LIBRARY:-$ORDO_BUILD_DIR/client/libordo.so.0}
# Arguments go to pytest (-k, -x, ...); it runs tests/python unless the first one names a file
# or folder (run.sh tests/python/test_capi.py). -rs prints each skip's reason in the log.
paths=(tests/python)
[ $# -gt 0 ] && [ -e "$src/$1" ] && paths=()
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cd "$src" && "$py" -m pytest -q -rs -p no:cacheprovider "${paths[@]}" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
# pytest's last line counts the outcomes: "3 skipped in 0.05s", "2 passed, 1 skipped in 4.1s"
summary=$(grep -E '^=* *[0-9]+ [a-z]+.* in [0-9.]+s' "$out" | tail -n 1)
# 5: nothing collected (a module-level skip such as pytest.importorskip("torch"), or -k
# selecting nothing); 0 with only skips: every test skipped itself
if [ "$rc" = 5 ] || { [ "$rc" = 0 ] && [[ $summary =~ [0-9]+\ skipped ]] &&
    ! [[ $summary =~ [0-9]+\ (passed|failed|xfailed|xpassed|error) ]]; }; then
  why=$(grep -m 1 '^SKIPPED' "$out" | sed -E 's/^SKIPPED \[[0-9]+\] //')
  echo "SKIP: pytest ran none of the tests: ${why:-${summary:-nothing collected}}"
  exit 77
fi
exit "$rc"
