#!/usr/bin/env bash
# run.sh: the Python binding's tests (pytest, tests/python) in the repository's .venv, made by
# scripts/setup-python.sh (scripts/test.sh runs it). Skips (exit 77) when there is no .venv.
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
cd "$src" && "$py" -m pytest -q -rs -p no:cacheprovider "${paths[@]}" "$@"
