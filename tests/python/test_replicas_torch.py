"""test_replicas_torch: replicated servers ([fault] replicas = 2) under an ordo.torch program in
server mode (model.trainer = declared, docs/architecture.md "Replicated servers"). Worker 0
SIGKILLs server 1 mid-run; its backups on server 0 are promoted, the workers send again what
the dead server had not answered, and the run ends with exit 0 and the parameters of the
fault-free run (within 1e-5: the servers' update is applied once per step, as without the
fault)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from cluster import BIN, SRC, worker_env  # noqa: E402

WORKER = SRC / "tests" / "python" / "repl_worker.py"


def launch(tmp: Path, name: str, kill: int) -> tuple[int, str]:
    out = tmp / name
    out.mkdir()
    conf = tmp / f"{name}.ini"
    conf.write_text("[cluster]\nservers = 2\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    f"[worker]\ncommand = {sys.executable} {WORKER} {out}\n\n"
                    "[fault]\nreplicas = 2\ntimeout_ms = 2000\nheartbeat_ms = 200\n")
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join([str(SRC / "tests" / "python"), env["PYTHONPATH"]])
    env["KILL_SERVER"] = str(kill)
    env["PIDS"] = str(tmp / f"{name}.pids")
    env["OMP_NUM_THREADS"] = "1"
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), str(conf), "--bin", str(BIN),
                        "--pids", env["PIDS"], f"--output.dir={tmp}", f"--output.run=run-{name}"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=240)
    return p.returncode, p.stdout


def test_a_killed_server_s_backups_finish_the_run_with_the_fault_free_parameters(tmp_path: Path):
    rc, log = launch(tmp_path, "clean", -1)
    assert rc == 0, log
    want = torch.load(tmp_path / "clean" / "params.pt")
    rc, log = launch(tmp_path, "kill", 1)
    assert rc == 0, log
    assert "repl_worker: killed server 1" in log, log
    assert "promoted backups for its" in log, log
    assert "the dead servers' backups are the primaries now" in log, log
    got = torch.load(tmp_path / "kill" / "params.pt")
    for k, v in want.items():
        torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-7, msg=f"after the kill: {k}")
