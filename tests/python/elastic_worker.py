"""elastic_worker: one worker of the elastic test (test_elastic.py), started by ordo-launch as
its [worker] command. Trains torch_mlp's model in MODE (server, the default, or gradients)
through ordo.torch.elastic for torch_mlp.ITERS steps on its half of each step's batch (the
data seeded by step), reporting each step. With KILL_AT=K in the environment, worker 1
SIGKILLs itself once (a marker file in OUT remembers it) in step K: right after it
(KILL_HOW=boundary), in its backward pass once the last layer's pushes went out and before
the first layer's (KILL_HOW=partial), or once its pushes of K were acknowledged but before it
reported the step (KILL_HOW=mid: the new process pushes them again); the launcher starts it
again. STEP_SLEEP=S sleeps S seconds after each step (a run long enough to kill the
scheduler in, test_sched_restart_torch.py). COMPRESSION (none, onebit or topk: 10% with error
feedback) is every parameter's wire codec. Worker 0 saves the final parameters to
OUT/params.pt.

    python elastic_worker.py OUT
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import ordo.torch as hvd
import torch
import torch_mlp
from ordo.torch import elastic


def main(argv: list[str]) -> int:
    out = Path(argv[1])
    torch.set_num_threads(1)
    hvd.init()
    net = torch_mlp.model()
    mode = os.environ.get("MODE", "server")
    codec = os.environ.get("COMPRESSION", "none")
    compression = hvd.Compression.topk(0.1) if codec == "topk" else getattr(hvd.Compression, codec)
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer(mode, net.parameters()),
                                   named_parameters=net.named_parameters(), mode=mode,
                                   compression=compression)
    state = elastic.TorchState(net, opt, step=0)
    kill_at = int(os.environ.get("KILL_AT", "-1"))
    mid = os.environ.get("KILL_HOW") == "mid"
    marker = out / "killed"
    if os.environ.get("KILL_HOW") == "partial":
        # worker 1 dies in backward of step KILL_AT before the first layer's gradients exist:
        # the last layer's pushes went out (and, with worker 0's, were applied), the first's
        # never do; the others finish that step's updates for the last layer only
        def die(module, grad_output):
            if hvd.rank() == 1 and state.step == kill_at and not marker.exists():
                time.sleep(1.0)  # the last layer's pushes reach the servers
                marker.write_text("1")
                os.kill(os.getpid(), signal.SIGKILL)
        net[0].register_full_backward_pre_hook(die)

    @elastic.run
    def train(state: elastic.TorchState) -> None:
        rank, size = hvd.rank(), hvd.size()
        xs, ys = torch_mlp.data()
        part = torch_mlp.BATCH // size
        print(f"elastic_worker: rank {rank} starts at step {state.step}"
              f"{' (restarted)' if state.restarted else ''}", flush=True)
        for step in range(state.step, torch_mlp.ITERS):
            state.step = step
            x = xs[state.step, rank * part:(rank + 1) * part]
            y = ys[state.step, rank * part:(rank + 1) * part]
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            if mid and rank == 1 and state.step == kill_at and not marker.exists():
                opt.synchronize()  # every push of the step is in, the step not reported
                marker.write_text("1")
                os.kill(os.getpid(), signal.SIGKILL)
            opt.step()
            state.commit()
            time.sleep(float(os.environ.get("STEP_SLEEP", "0")))  # a longer run to fault
            if not mid and rank == 1 and state.step == kill_at and not marker.exists():
                marker.write_text("1")
                os.kill(os.getpid(), signal.SIGKILL)

    train(state)
    opt.synchronize()
    if hvd.rank() == 0:
        torch.save(net.state_dict(), out / "params.pt")
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    torch_mlp.exit_now(main(sys.argv))
