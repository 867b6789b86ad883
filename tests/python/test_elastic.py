"""test_elastic: ordo.torch.elastic with [fault] worker = restart. A PyTorch worker (data seeded
by step) SIGKILLed mid-run is started again by ordo-launch and goes on where its predecessor
stopped: server mode at the step it did not finish, with the servers' values; gradients mode at
the iteration of a live peer's last commit, with that peer's parameters and Adam state. The run
ends with the parameters of a fault-free run (within 1e-5). test_elastic_ef.py: the same
with error feedback."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from cluster import BIN, SRC, worker_env  # noqa: E402

WORKER = SRC / "tests" / "python" / "elastic_worker.py"


def launch(tmp: Path, name: str, kill_at: int, how: str = "boundary",
           mode: str = "server", codec: str = "none") -> tuple[int, str]:
    out = tmp / name
    out.mkdir()
    conf = tmp / f"{name}.ini"
    conf.write_text("[cluster]\nservers = 2\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    f"[worker]\ncommand = {sys.executable} {WORKER} {out}\n\n"
                    "[fault]\nworker = restart\ntimeout_ms = 5000\n")
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join([str(SRC / "tests" / "python"), env["PYTHONPATH"]])
    env["KILL_AT"] = str(kill_at)
    env["KILL_HOW"] = how
    env["MODE"] = mode
    env["COMPRESSION"] = codec
    env["OMP_NUM_THREADS"] = "1"
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), str(conf), "--bin", str(BIN),
                        f"--output.dir={tmp}", f"--output.run=run-{name}"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    return p.returncode, p.stdout


@pytest.mark.parametrize("mode", ["server", "gradients"])
def test_a_killed_worker_restarts_and_the_run_ends_as_without_the_fault(tmp_path: Path,
                                                                        mode: str):
    rc, log = launch(tmp_path, "clean", -1, mode=mode)
    assert rc == 0, log
    want = torch.load(tmp_path / "clean" / "params.pt")
    # killed right after step 10: the new process goes on at 11, or at 10 when the report of
    # step 10 was still in the dead process (its pushes of 10 are then sent again). Killed in
    # step 12 once its pushes were in but before it reported the step: server mode, the new
    # process goes on at 12 and pushes step 12 again, and the servers leave those pushes out;
    # gradients mode, it goes on at the iteration of the peer's last commit, 13 once the peer
    # finished step 12 (12 if it had not: then it pushes 12 again, left out)
    mid = (12,) if mode == "server" else (12, 13)
    cases = [("boundary", "boundary", 10, (10, 11)), ("mid", "mid", 12, mid)]
    # server mode, killed in backward of step 14 between the last layer's pushes and the
    # first's: the others complete step 14 for the last layer; the new process's pull of 14
    # gets the last layer's value from before that update (the servers keep it), so its
    # gradients are its predecessor's and the run ends as without the fault
    if mode == "server":
        cases.append(("partial", "partial", 14, (14,)))
    for name, how, kill_at, at in cases:
        rc, log = launch(tmp_path, name, kill_at, how, mode)
        assert rc == 0, log
        assert "starting it again (restart 1/" in log, log
        assert any(f"rank 1 starts at step {s} (restarted)" in log for s in at), log
        if mode == "gradients":
            assert "took a peer's state of iteration" in log, log
        resent = sum(int(line.split(" re-sent pushes")[0].rsplit(" ", 1)[1])
                     for line in log.splitlines() if "re-sent pushes left out" in line)
        assert resent > 0 or how == "boundary" or mode == "gradients", log
        got = torch.load(tmp_path / name / "params.pt")
        for k, v in want.items():
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-7, msg=f"{name} {k}")

