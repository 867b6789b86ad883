"""forkserver: the PyTorch test workers that Cluster.start_worker runs, started as forks of one
process that has imported PyTorch already instead of each as a new interpreter. A worker is
still a process of its own talking to the daemons over loopback; what it skips is PyTorch's
start-up (import torch, and torch._dynamo with the first optimizer): about 4 s of CPU per
worker on the 2-core VM, most of what a small cluster test took. Only PyTorch is preloaded,
in a process with one thread: the worker script imports ordo and its own modules itself, with
its own argv, environment, working folder and log, and ends as an interpreter does (its
SystemExit code, 1 with the traceback on an exception, -N when signal N killed it; see _exit).
ORDO_TEST_FORKSERVER=0 starts every worker as a new interpreter instead.

    python forkserver.py    (the server: JSON requests on stdin, one per line; answers on
                             stdout: {"pid": P} per request, {"exited": P, "status": S})
"""
from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import subprocess
import sys
import threading
from typing import Any

START_S = 120  # the server's start (import torch) and each fork's answer, on a loaded machine


def _run_child(req: dict[str, Any]) -> int:
    """_run_child makes this forked process the worker of req and runs its script."""
    import runpy
    import traceback
    fd = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.chdir(req["cwd"])
    os.environ.clear()
    os.environ.update(req["env"])
    script = os.path.abspath(req["argv"][0])
    sys.argv = [script, *req["argv"][1:]]
    extra = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = [os.path.dirname(script), *extra,
                   *[p for p in sys.path[1:] if p not in extra]]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        if e.code is None or isinstance(e.code, int):
            return e.code or 0
        print(e.code, file=sys.stderr)
        return 1
    except BaseException:  # noqa: BLE001 - as the interpreter does: the traceback, status 1
        traceback.print_exc()
        return 1
    return 0


def _exit(code: int) -> None:
    """_exit ends the worker as the interpreter would, without tearing down PyTorch's modules
    one by one (1.5 s of CPU per process here): it waits for the threads that are not
    daemons, runs the atexit handlers, closes the ordo clients left open (as their __del__
    would: a joined client that did not leave aborts the run, naming this worker) and
    flushes the output."""
    import atexit
    import gc
    for t in threading.enumerate():
        if t is not threading.main_thread() and not t.daemon:
            t.join()
    atexit._run_exitfuncs()
    ordo = sys.modules.get("ordo.client")
    if ordo is not None:
        for o in gc.get_objects():
            if isinstance(o, ordo.Client):
                o.close()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def serve() -> None:
    """serve forks a worker per request on stdin until stdin closes."""
    import torch
    torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)  # imports torch._dynamo
    out = sys.stdout
    buf = b""
    live = True
    while live:
        ready, _, _ = select.select([0], [], [], 0.05)
        while True:  # the workers that ended
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            out.write(json.dumps({"exited": pid, "status": os.waitstatus_to_exitcode(st)}) + "\n")
            out.flush()
        if not ready:
            continue
        data = os.read(0, 65536)
        live = bool(data)
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            pid = os.fork()
            if pid == 0:
                _exit(_run_child(json.loads(line)))
            out.write(json.dumps({"pid": pid}) + "\n")
            out.flush()


class Worker:
    """Worker is a forked worker with the part of subprocess.Popen that Cluster uses."""

    def __init__(self, server: ForkServer, pid: int):
        self.server = server
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        with self.server.cond:
            self.returncode = self.server.status.get(self.pid)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        with self.server.cond:
            if not self.server.cond.wait_for(lambda: self.pid in self.server.status, timeout):
                raise subprocess.TimeoutExpired(f"worker pid {self.pid}", timeout or 0)
            self.returncode = self.server.status[self.pid]
        return self.returncode

    def kill(self) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class ForkServer:
    """ForkServer runs the server with env (PYTHONPATH and what PyTorch reads at import)."""

    def __init__(self, env: dict[str, str]):
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__)], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.status: dict[int, int] = {}
        self.cond = threading.Condition()
        self.pids: queue.Queue[int] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "pid" in msg:
                self.pids.put(msg["pid"])
            else:
                with self.cond:
                    self.status[msg["exited"]] = msg["status"]
                    self.cond.notify_all()

    def spawn(self, argv: list[str], env: dict[str, str], log: str, cwd: str) -> Worker:
        """spawn starts argv (a script and its arguments) as a worker writing to log."""
        assert self.proc.stdin is not None
        req = {"argv": argv, "env": env, "log": log, "cwd": cwd}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        try:
            return Worker(self, self.pids.get(timeout=START_S))
        except queue.Empty:
            raise AssertionError(f"the fork server started no worker in {START_S} s "
                                 f"(status {self.proc.poll()})") from None

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


if __name__ == "__main__":
    serve()
