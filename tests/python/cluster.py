"""cluster: a scheduler and servers of the C daemons on loopback for the Python tests; the
tests start their workers (plain processes, or with the environment ordo-launch gives a
[worker] command; in the PyTorch tests, forks of a process with PyTorch imported:
forkserver.py). Needs ORDO_BIN_DIR and ORDO_SOURCE_DIR (ctest sets both)."""
from __future__ import annotations

import atexit
import os
import subprocess
import sys
import time
from pathlib import Path

import forkserver

SRC = Path(os.environ.get("ORDO_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BIN = Path(os.environ.get("ORDO_BIN_DIR", SRC / "build" / "bin"))
CONF = SRC / "examples" / "hello_ordo.ini"
LIMIT_S = 120


class Cluster:
    """Cluster runs one scheduler and its servers of conf, the daemons' extra arguments args
    (the server count from servers, else from a --cluster.servers= among args, else 2)."""

    def __init__(self, tmp: Path, *args: str, conf: Path = CONF, servers: int | None = None):
        self.tmp = tmp
        self.conf = conf
        self.procs: dict[str, subprocess.Popen | forkserver.Worker] = {}
        common = ["-c", str(conf), f"--output.dir={tmp}", "--output.run=run", *args]
        sched = self.start("scheduler", str(BIN / "ordo-scheduler"), *common,
                           "--cluster.scheduler=tcp://127.0.0.1:0")
        self.endpoint = self.ready(sched)
        if servers is None:
            given = [a for a in args if a.startswith("--cluster.servers=")]
            servers = int(given[-1].split("=")[1]) if given else 2
        for i in range(servers):
            self.start(f"server{i}", str(BIN / "ordo-server"), *common,
                       f"--cluster.scheduler={self.endpoint}", f"--cluster.rank={i}")

    def start(self, name: str, *cmd: str, env: dict | None = None) -> subprocess.Popen:
        with open(self.tmp / f"{name}.log", "w") as log:  # the child keeps its own copy
            p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.procs[name] = p
        return p

    def start_worker(self, rank: int, cmd: list[str]) -> subprocess.Popen | forkserver.Worker:
        """start_worker runs cmd as worker rank with the environment of a [worker] command; a
        Python script (cmd: sys.executable, the script, its arguments) runs as a fork of the
        fork server, which has PyTorch imported already (forkserver.py)."""
        env = worker_env()
        env.update({"ORDO_CONF": str(self.conf), "ORDO_CLUSTER_SCHEDULER": self.endpoint,
                    "ORDO_CLUSTER_RANK": str(rank), "ORDO_LOCAL_RANK": str(rank),
                    "ORDO_OUTPUT_DIR": str(self.tmp), "ORDO_OUTPUT_RUN": "run",
                    "OMP_NUM_THREADS": "1"})
        name = f"worker{rank}"
        server = fork_server() if len(cmd) > 1 and cmd[0] == sys.executable else None
        if server is None:
            return self.start(name, *cmd, env=env)
        w = server.spawn(cmd[1:], env, str(self.tmp / f"{name}.log"), os.getcwd())
        self.procs[name] = w
        return w

    def ready(self, p: subprocess.Popen) -> str:
        deadline = time.monotonic() + LIMIT_S
        log = self.tmp / "scheduler.log"
        while time.monotonic() < deadline:
            for line in log.read_text().splitlines():
                if line.startswith("READY "):
                    return line.split()[1]
            if p.poll() is not None:
                raise AssertionError(f"scheduler exited: {log.read_text()}")
            time.sleep(0.02)
        raise AssertionError("scheduler not ready")

    def log(self, name: str) -> str:
        return (self.tmp / f"{name}.log").read_text()

    def finish(self, name: str) -> int:
        try:
            return self.procs[name].wait(LIMIT_S)
        except subprocess.TimeoutExpired:
            self.procs[name].kill()
            raise AssertionError(f"{name} did not end: {self.log(name)}") from None

    def stop(self) -> None:
        for p in self.procs.values():
            if p.poll() is None:
                p.kill()
                p.wait()


_server: forkserver.ForkServer | None = None


def fork_server() -> forkserver.ForkServer | None:
    """fork_server is this process's fork server of PyTorch workers, started on first use;
    None unless this process imported torch (a PyTorch test), or with
    ORDO_TEST_FORKSERVER=0."""
    global _server
    if os.environ.get("ORDO_TEST_FORKSERVER", "1") == "0" or "torch" not in sys.modules:
        return None
    if _server is None:
        env = worker_env()
        env["OMP_NUM_THREADS"] = "1"
        _server = forkserver.ForkServer(env)
        atexit.register(_server.close)
    return _server


def worker_env() -> dict:
    """worker_env is this process's environment with the tree's python/ on PYTHONPATH."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC / "python"), env.get("PYTHONPATH", "")])
    return env
