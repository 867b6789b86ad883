#!/usr/bin/env bash
# setup-python.sh: the Python environment of ordo's binding, .venv at the repository root:
# the ordo package (python/) installed in editable mode, with numpy, pytest and ruff from PyPI.
# Idempotent: a .venv that already has them is left as it is. scripts/test.sh runs it;
# scripts/run.sh (the C job) does not need it.
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
  bash scripts/setup.sh  # python3-venv
fi
venv=.venv
if [ -x $venv/bin/python ] && $venv/bin/python -c 'import importlib.util as u, numpy, pytest; assert u.find_spec("ordo") and u.find_spec("ruff")' 2>/dev/null; then
  echo "setup-python: .venv ready"
  exit 0
fi
"$py" -m venv $venv
$venv/bin/pip install -q --disable-pip-version-check numpy pytest ruff
$venv/bin/pip install -q --disable-pip-version-check --no-deps -e python
$venv/bin/python -c 'import numpy, pytest; print("setup-python: .venv with numpy", numpy.__version__, "and pytest", pytest.__version__)'
