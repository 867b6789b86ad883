#!/usr/bin/env bash
# setup-python.sh: the Python environment of ordo's binding, .venv at the repository root,
# made the way a user installs ordo: pip install ".[torch,test]" (pyproject.toml: CMake builds
# libordo and the daemons into the package; about a minute on 2 cores the first time, then
# incremental in build/wheel/), with torchvision for the examples; torch's CUDA wheels are
# about 4 GB. Idempotent: a .venv that has everything, with ordo installed from this commit,
# is left as it is; otherwise only what is missing or stale is installed. scripts/test.sh runs
# it; scripts/run.sh (the C job) does not need it.
set -euo pipefail
cd "$(dirname "$0")/.."
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
venv=.venv
stamp=$venv/.ordo-installed # the commit the installed ordo was built from
head=$(git rev-parse HEAD 2>/dev/null || echo unknown)
has() { $venv/bin/python -c "import importlib.util as u, sys; sys.exit(0 if u.find_spec('$1') else 1)" 2>/dev/null; }
if [ -x $venv/bin/python ] && has numpy && has pytest && has ruff && has torch && has torchvision &&
   [ -x $venv/bin/ordo-launch ] && [ "$(cat $stamp 2>/dev/null)" = "$head" ]; then
  echo "setup-python: .venv ready"
  exit 0
fi
bash scripts/setup.sh # python3-venv, and the C build's packages for the wheel
[ -x $venv/bin/python ] || "$py" -m venv $venv
missing=()
for pkg in numpy pytest ruff torch torchvision; do has $pkg || missing+=("$pkg"); done
# the package with its extras (torch, numpy; pytest, ruff), torchvision for the examples
# (pip installs only what is missing; ordo itself again, from this tree)
$venv/bin/pip install -q --disable-pip-version-check ".[torch,test]" ${missing[@]:+torchvision}
echo "$head" > $stamp
$venv/bin/python -c 'import numpy, pytest, torch, ordo; print("setup-python: .venv with numpy", numpy.__version__, "pytest", pytest.__version__, "torch", torch.__version__, "ordo", ordo.version())'
