#!/usr/bin/env bash
# setup-python.sh: the Python environment of ordo's binding, .venv at the repository root:
# the ordo package (python/) installed in editable mode, with numpy, pytest, ruff, torch and
# torchvision from PyPI (ordo.torch; torch's CUDA wheels are about 4 GB). Idempotent: a .venv
# that already has them is left as it is; one that lacks some gets only those. scripts/test.sh runs it;
# scripts/run.sh (the C job) does not need it.
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
if ! "$py" -c 'import venv, ensurepip' 2>/dev/null; then
  bash scripts/setup.sh  # python3-venv
fi
venv=.venv
has() { $venv/bin/python -c "import importlib.util as u, sys; sys.exit(0 if u.find_spec('$1') else 1)" 2>/dev/null; }
if [ -x $venv/bin/python ] && has ordo && has numpy && has pytest && has ruff && has torch &&
   has torchvision; then
  echo "setup-python: .venv ready"
  exit 0
fi
[ -x $venv/bin/python ] || "$py" -m venv $venv
missing=()
for pkg in numpy pytest ruff torch torchvision; do has $pkg || missing+=("$pkg"); done
[ ${#missing[@]} -eq 0 ] || $venv/bin/pip install -q --disable-pip-version-check "${missing[@]}"
has ordo || $venv/bin/pip install -q --disable-pip-version-check --no-deps -e python
# (ordo itself is not imported here: libordo may not be built yet)
$venv/bin/python -c 'import numpy, pytest, torch; print("setup-python: .venv with numpy", numpy.__version__, "pytest", pytest.__version__, "torch", torch.__version__)'
