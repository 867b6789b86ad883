#!/usr/bin/env bash
# pip_install: the package as a PyTorch user gets it. `pip install <repository>` into a fresh
# venv (the wheel's CMake build reuses build/wheel/ when scripts/setup-python.sh made it
# already); then, from a folder outside the repository and with neither ORDO_LIBRARY nor
# PYTHONPATH, `import ordo.torch` loads the package's own libordo, every console script
# answers --help, and the venv's ordo-launch runs a job with no conf file
# (ordo-launch --workers 2 --servers 1 -- python train.py) whose workers average their
# gradients exactly. torch comes from the repository's .venv (a .pth file: no 4 GB download);
# skipped without it.
source "$ORDO_SOURCE_DIR/tests/integration/lib.sh"
SRC=$ORDO_SOURCE_DIR
# the folder torch is imported from in .venv (its site-packages, or one a .pth file names)
site=$("$SRC/.venv/bin/python" -c 'import os, torch; print(os.path.dirname(os.path.dirname(torch.__file__)))' 2> /dev/null) ||
  skip "no torch in $SRC/.venv (scripts/setup-python.sh)"
python3 -c 'import venv, ensurepip' 2>/dev/null || skip "python3 has no venv module (python3-venv)"
V=$T/venv
python3 -m venv "$V" || fail "python3 -m venv"
"$V/bin/pip" install -q --disable-pip-version-check "$SRC" > "$T/pip.log" 2>&1 ||
  { cat "$T/pip.log"; fail "pip install $SRC"; }
echo "$site" > "$(echo "$V"/lib/python3*/site-packages)/repo-venv-torch.pth"
ok "pip install $SRC into a fresh venv"

mkdir -p "$T/elsewhere"
cd "$T/elsewhere" || exit 1
unset ORDO_LIBRARY PYTHONPATH
for p in ordo-launch ordo-scheduler ordo-server ordo-worker ordo-plan ordo-bench ordo-keygen \
         ordo-slurm; do
  [ -x "$V/bin/$p" ] || fail "no console script $p in $V/bin"
  "$V/bin/$p" --help > "$T/help-$p.log" 2>&1 || fail "$p --help: $(head -3 "$T/help-$p.log")"
done
ok "console scripts on the venv's PATH, each answers --help"

lib=$("$V/bin/python" -c '
import ordo.torch, ordo
ordo.version()  # loads libordo
print(next(l.split()[-1] for l in open("/proc/self/maps") if "libordo" in l))') ||
  fail "import ordo.torch from $PWD"
case "$lib" in "$V"/lib/python3*/site-packages/ordo/_native/lib/libordo.so.0) ;;
  *) fail "libordo loaded from $lib, not from the installed package" ;; esac
ok "import ordo.torch from another folder: libordo from the package ($lib)"

# where the build makes libordo's NCCL plugin (the CUDA toolkit and NCCL found), the wheel
# carries it beside libordo, and libordo finds it there (no device here: the plugin's own
# "no CUDA device" error; where there is one, the plugin's backend starts)
if [ -e "${ORDO_BUILD_DIR:-$SRC/build}/client/libordo_nccl.so" ]; then
  plugin=$(dirname "$lib")/libordo_nccl.so
  [ -e "$plugin" ] || fail "the build has libordo_nccl.so, the installed package has no $plugin"
  ok "the wheel carries the NCCL plugin beside libordo ($plugin)"
fi

cat > train.py <<'PY'
import ordo.torch as hvd
import torch

hvd.init()
torch.manual_seed(0)
net = torch.nn.Linear(4, 1)
opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                               named_parameters=net.named_parameters())
hvd.broadcast_parameters(net.state_dict(), root_rank=0)
for _ in range(3):
    opt.zero_grad()
    net(torch.full((2, 4), float(hvd.rank() + 1))).sum().backward()
    opt.step()
print(f"rank {hvd.rank()} of {hvd.size()}: mean gradient {net.weight.grad[0, 0].item()}")
hvd.shutdown()
PY
OMP_NUM_THREADS=1 "$V/bin/ordo-launch" --workers 2 --servers 1 --fault.timeout_ms=10000 \
  --fault.startup_ms=600000 \
  -- "$V/bin/python" train.py > "$T/launch.log" 2>&1 || { cat "$T/launch.log"; fail "ordo-launch"; }
for r in 0 1; do # rank r's gradient is 2(r + 1): the mean over the two is 3
  grep -q "^\[worker $r\] rank $r of 2: mean gradient 3.0$" "$T/launch.log" ||
    { cat "$T/launch.log"; fail "worker $r's mean gradient"; }
done
ls runs/*/summary.json > /dev/null 2>&1 || fail "no run folder in the current folder"
ok "the venv's ordo-launch --workers 2 --servers 1 -- python train.py: both workers got the mean gradient 3.0"
