"""test_launch_torch: ordo-launch's one-liner (no conf file) with PyTorch workers: each gets
torchrun's environment, so init_process_group() works unchanged and agrees with
ordo.torch.rank(); DDP with ordo.torch.ddp_comm_hook on 2 workers equals one process training
on the whole batches. Needs torch (skipped without it)."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")

import torch_mlp  # noqa: E402
from cluster import BIN, SRC  # noqa: E402

HERE = Path(__file__).resolve().parent


def launch(tmp: Path, *args: str) -> str:
    """launch runs scripts/ordo-launch ARGS in tmp (output there) and returns its output."""
    env = dict(os.environ, OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(SRC / "python"), str(HERE)]))
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), "--bin", str(BIN), *args],
                       cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout
    return p.stdout


def test_ddp_comm_hook_two_workers_equal_one_process(tmp_path: Path):
    """ordo-launch --workers 2 --servers 2 -- python ddp_worker.py: torchrun's variables, the
    same ranks in torch.distributed and ordo.torch, and DDP through ordo's servers (several
    buckets per step) equal to single-process SGD on the whole batches within 1e-5."""
    out = launch(tmp_path, "--workers", "2", "--servers=2", "--fault.timeout_ms=10000",
                 "--fault.startup_ms=600000",
                 "--", sys.executable, str(HERE / "ddp_worker.py"), str(tmp_path))
    ports = set()
    for r in range(2):
        m = re.search(rf"^\[worker {r}\] env RANK={r} WORLD_SIZE=2 LOCAL_RANK={r} "
                      r"LOCAL_WORLD_SIZE=2 MASTER_ADDR=127\.0\.0\.1 MASTER_PORT=(\d+)$",
                      out, re.M)
        assert m, out
        ports.add(m.group(1))
        assert f"[worker {r}] ranks: torch {r}/2, ordo {r}/2" in out, out
        m = re.search(rf"^\[worker {r}\] joined: ordo rank {r} of 2, torch rank {r}; "
                      r"(\d+) buckets$", out, re.M)
        assert m and int(m.group(1)) >= 2, out
    assert len(ports) == 1, f"the workers got different MASTER_PORTs: {ports}"
    assert "4 tensors" in out, out  # every parameter declared from the first iteration's buckets

    torch.manual_seed(0)
    net = torch_mlp.model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
    torch_mlp.train(net, opt, 0, 1)
    want = net.state_dict()
    for r in range(2):
        got = torch.load(tmp_path / f"out{r}.pt", weights_only=True)
        assert set(got) == set(want)
        for k, v in want.items():
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-5, msg=f"{k} of worker {r}")


def test_one_liner_needs_a_command_or_a_conf(tmp_path: Path):
    """ordo-launch with neither a conf nor settings says how to call it (exit 2)."""
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), "--bin", str(BIN)], cwd=tmp_path,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 2
    assert "--workers N --servers M -- COMMAND" in p.stdout, p.stdout
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), "--bin", str(BIN), "--workers",
                        "2", "--"], cwd=tmp_path, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    assert p.returncode == 2
    assert "no command after --" in p.stdout, p.stdout
