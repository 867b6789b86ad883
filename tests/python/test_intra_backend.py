"""test_intra_backend: how libordo (the Python binding's library) reaches the intra backends
of host groups, against real clusters of the C daemons on loopback (2 workers in one group
of 2, joined by tests/python/hello_worker.py, which needs no torch):

- intra.backend = nccl: libordo loads its NCCL plugin (libordo_nccl.so beside it) and, with
  no CUDA device here, every worker's join fails with the plugin's own message, carried
  through libordo's error state into the OrdoError (not "not in this build");
- intra.backend = auto with one member's tensors on CUDA (intra.device = cuda: nccl, since
  the plugin loads) and the other's on the CPU (shm): the scheduler refuses the run at the
  start, naming both members and their backends.

Skipped where the build made no plugin (no CUDA toolkit or NCCL) or where a CUDA device is
present (the nccl group would start: test_torch_groups.py's CUDA case runs there)."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from cluster import SRC, Cluster

WORKER = SRC / "tests" / "python" / "hello_worker.py"
LIB = Path(os.environ.get("ORDO_LIBRARY", SRC / "build" / "client" / "libordo.so.0"))
PLUGIN = LIB.parent / "libordo_nccl.so"

pytestmark = [
    pytest.mark.skipif(not PLUGIN.exists(), reason=f"no NCCL plugin at {PLUGIN} (the build "
                       "found no CUDA toolkit or NCCL)"),
    pytest.mark.skipif(os.path.exists("/dev/nvidia0"), reason="a CUDA device is here: the "
                       "nccl group would start (test_torch_groups.py's CUDA case checks it)"),
]


def conf(tmp: Path, backend: str) -> Path:
    path = tmp / "group.ini"
    path.write_text("[cluster]\nservers = 1\nworkers = 2\nlocal_size = 2\n\n"
                    f"[intra]\nbackend = {backend}\n\n[model]\ntrainer = declared\n\n"
                    "[fault]\ntimeout_ms = 3000\nheartbeat_ms = 200\nstartup_ms = 60000\n")
    return path


def run(tmp: Path, backend: str, settings: list[list[str]]) -> Cluster:
    """run starts a cluster of conf(backend) and its 2 workers (worker r with settings[r]),
    waits for both workers to end, and stops the daemons."""
    c = Cluster(tmp, conf=conf(tmp, backend), servers=1)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(WORKER), str(c.conf), *settings[r]])
        for r in range(2):
            assert c.finish(f"worker{r}") != 0, c.log(f"worker{r}")
    finally:
        c.stop()
    return c


def test_nccl_loads_the_plugin_and_says_there_is_no_device(tmp_path: Path):
    c = run(tmp_path, "nccl", [[], []])
    for r in range(2):
        log = c.log(f"worker{r}")
        assert "intra.backend nccl: no CUDA device (" in log, log
        assert "not in this build" not in log and "built without NCCL" not in log, log


def test_auto_refuses_a_group_whose_members_resolved_differently(tmp_path: Path):
    c = run(tmp_path, "auto", [["intra.device=cuda"], []])
    sched = c.log("scheduler")
    want = ("intra.backend = auto: the members of group 0 resolved different backends "
            "(worker 0 nccl, worker 1 shm)")
    assert want in sched, sched
    for r in range(2):
        assert want in c.log(f"worker{r}"), c.log(f"worker{r}")
