"""repl_worker: one worker of the replicated-servers test (test_replicas_torch.py), started by
ordo-launch as its [worker] command. Trains torch_mlp's model in server mode (SGD with momentum
and weight decay on the servers) for STEPS steps on its half of each step's batch (the data
seeded by step). With KILL_SERVER=R and PIDS=FILE (ordo-launch --pids) in the environment,
worker 0 SIGKILLs server R right after its step KILL_AT, while the other worker's pushes of
the next step are on their way; the run goes on with the dead server's backups. Worker 0 saves
the final parameters to OUT/params.pt.

    python repl_worker.py OUT
"""
from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import ordo.torch as hvd
import torch
import torch_mlp

STEPS = 60


def server_pid(pids: Path, rank: int) -> int:
    """server_pid is the newest pid ordo-launch recorded for server rank."""
    found = [int(line.rsplit(" ", 1)[1]) for line in pids.read_text().splitlines()
             if line.rsplit(" ", 1)[0] == f"server {rank}"]
    if not found:
        raise RuntimeError(f"no server{rank} in {pids}")
    return found[-1]


def main(argv: list[str]) -> int:
    out = Path(argv[1])
    torch.set_num_threads(1)
    hvd.init()
    net = torch_mlp.model()
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer("server", net.parameters()),
                                   named_parameters=net.named_parameters(), mode="server")
    victim = int(os.environ.get("KILL_SERVER", "-1"))
    kill_at = int(os.environ.get("KILL_AT", "20"))
    g = torch.Generator().manual_seed(2)
    rank, size = hvd.rank(), hvd.size()
    part = torch_mlp.BATCH // size
    for step in range(STEPS):
        xs = torch.randn(torch_mlp.BATCH, 8, generator=g)
        ys = torch.randn(torch_mlp.BATCH, 4, generator=g)
        opt.zero_grad()
        x, y = xs[rank * part:(rank + 1) * part], ys[rank * part:(rank + 1) * part]
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
        if rank == 0 and step == kill_at and victim >= 0:
            pid = server_pid(Path(os.environ["PIDS"]), victim)
            os.kill(pid, signal.SIGKILL)
            print(f"repl_worker: killed server {victim} (pid {pid}) after step {step}", flush=True)
    opt.synchronize()
    if rank == 0:
        torch.save(net.state_dict(), out / "params.pt")
    print(f"repl_worker: rank {rank}: {STEPS} steps", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    torch_mlp.exit_now(main(sys.argv))
