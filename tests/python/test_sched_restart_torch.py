"""test_sched_restart_torch: fault.scheduler = restart with a [worker] command program. Two
PyTorch workers (ordo.torch, server and gradients mode, elastic_worker.py) train under
ordo-launch; the test SIGKILLs the scheduler in mid-run, ordo-launch starts a new one at the
same address, the workers and servers register with it again through libordo, and the run
ends with the parameters of a fault-free run (within 1e-5) and a summary that counts the
restart."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from cluster import BIN, SRC, worker_env  # noqa: E402

WORKER = SRC / "tests" / "python" / "elastic_worker.py"


def launch(tmp: Path, name: str, mode: str, kill: bool) -> tuple[int, str]:
    out = tmp / name
    out.mkdir()
    conf = tmp / f"{name}.ini"
    conf.write_text("[cluster]\nservers = 2\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    f"[worker]\ncommand = {sys.executable} {WORKER} {out}\n\n"
                    "[fault]\nscheduler = restart\ntimeout_ms = 1000\ntimeout_max_ms = 1000\n"
                    "heartbeat_ms = 100\n")
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join([str(SRC / "tests" / "python"), env["PYTHONPATH"]])
    env["MODE"] = mode
    env["STEP_SLEEP"] = "0.1"
    env["OMP_NUM_THREADS"] = "1"
    pids = tmp / f"{name}.pids"
    p = subprocess.Popen([str(SRC / "scripts" / "ordo-launch"), str(conf), "--bin", str(BIN),
                          "--pids", str(pids), f"--output.dir={tmp}", f"--output.run=run-{name}"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if kill:  # once the workers are 10 steps in (3 s of 0.1 s steps), kill the scheduler
        metrics = tmp / f"run-{name}" / "metrics.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and p.poll() is None:
            if metrics.exists() and len(metrics.read_text().splitlines()) >= 20:
                break
            time.sleep(0.05)
        sched = next(int(line.split()[1]) for line in pids.read_text().splitlines()
                     if line.startswith("scheduler "))
        os.kill(sched, signal.SIGKILL)
    log, _ = p.communicate(timeout=240)
    return p.returncode, log


@pytest.mark.parametrize("mode", ["server", "gradients"])
def test_a_killed_scheduler_is_replaced_and_the_run_ends_as_without_the_fault(tmp_path: Path,
                                                                              mode: str):
    rc, log = launch(tmp_path, "clean", mode, kill=False)
    assert rc == 0, log
    want = torch.load(tmp_path / "clean" / "params.pt")
    rc, log = launch(tmp_path, "kill", mode, kill=True)
    assert rc == 0, log
    assert "the scheduler exited with status 137; starting it again at tcp://" in log, log
    assert "registered again with the new scheduler (generation 2)" in log, log
    got = torch.load(tmp_path / "kill" / "params.pt")
    for k in want:
        assert torch.allclose(got[k], want[k], atol=1e-5), (k, (got[k] - want[k]).abs().max())
    summary = json.loads((tmp_path / "run-kill" / "summary.json").read_text())
    assert summary["scheduler_restarts"] == 1, summary
    lines = (tmp_path / "run-kill" / "metrics.jsonl").read_text().splitlines()
    seen = sorted((d["worker"], d["iter"]) for d in map(json.loads, lines))
    assert seen == sorted(set(seen)) and len(seen) == 2 * 30, seen
