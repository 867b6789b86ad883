"""epoch_worker: one worker of test_elastic_shrink.py and test_elastic_grow.py, started by
ordo-launch as its [worker] command (or ordo-launch --add-worker). Trains torch_mlp's model
(MODE = server or gradients in the environment) on a fixed data set of N samples read through
ordo.torch.ElasticSampler (the batch service, one epoch; N = $SAMPLES, default 240). After
each step it appends "STEP RANK INDICES" to OUT/batches-RANK.txt. With KILL_AT=K, worker 1
SIGKILLs itself once it holds its batch of step K, before computing it (the batch is leased to
it and goes back to the service). With WAIT_AT=K and WAIT_FOR=W, the workers of the start
wait before step K until the run has W workers (a worker added with ordo-launch --add-worker
joined), at most 120 s. Every worker that ends saves its parameters to OUT/params-RANK.pt.

    python epoch_worker.py OUT
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import ordo.torch as hvd
import torch
import torch_mlp
from ordo.torch import elastic

BATCH = 8


def dataset(n: int) -> torch.utils.data.TensorDataset:
    """dataset is n fixed samples of torch_mlp's shapes."""
    g = torch.Generator().manual_seed(3)
    return torch.utils.data.TensorDataset(torch.randn(n, 8, generator=g),
                                          torch.randn(n, 4, generator=g))


class Indexed(torch.utils.data.Dataset):
    """Indexed yields (index, x, y): the worker logs which samples it trained on."""

    def __init__(self, base: torch.utils.data.TensorDataset):
        self.base = base

    def __len__(self) -> int:
        return len(self.base)

    def __getitem__(self, i: int):
        x, y = self.base[i]
        return i, x, y


def main(argv: list[str]) -> int:
    out = Path(argv[1])
    mode = os.environ.get("MODE", "server")
    kill_at = int(os.environ.get("KILL_AT", "-1"))
    wait_at = int(os.environ.get("WAIT_AT", "-1"))
    wait_for = int(os.environ.get("WAIT_FOR", "0"))
    torch.set_num_threads(1)
    hvd.init()
    net = torch_mlp.model()
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer(mode, net.parameters()),
                                   named_parameters=net.named_parameters(), mode=mode)
    data = Indexed(dataset(int(os.environ.get("SAMPLES", "240"))))
    sampler = hvd.ElasticSampler(data, shuffle=True, seed=5, batch_size=BATCH, epochs=1)
    loader = torch.utils.data.DataLoader(data, batch_size=BATCH, sampler=sampler)
    state = elastic.TorchState(net, opt, step=0)

    @elastic.run
    def train(state: elastic.TorchState) -> None:
        rank = hvd.rank()
        sampler.set_epoch(0)
        with open(out / f"batches-{rank}.txt", "a") as log:
            train_epoch(state, rank, log)

    def train_epoch(state: elastic.TorchState, rank: int, log: Any) -> None:
        for idx, x, y in loader:
            if rank == 1 and state.step == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)  # holding the batch, before its push
            if state.step == wait_at and not state.restarted:
                # the library takes the scheduler's messages (MEMBERS, a peer's request for
                # this worker's state) within its calls: a pull of a value already there
                rt = hvd._rt_or_raise()
                t = next(iter(rt.tensors.values()))
                scratch = torch.empty(t.numel)
                deadline = time.monotonic() + 120
                while rt.live()[1] < wait_for and time.monotonic() < deadline:
                    rt.client.pull(t.index, scratch).wait()
                    time.sleep(0.05)
                print(f"epoch_worker: rank {rank}: {hvd._rt_or_raise().live()[1]} workers at "
                      f"step {state.step}", flush=True)
            opt.zero_grad()
            torch.nn.functional.mse_loss(net(x), y).backward()
            opt.step()
            log.write(f"{state.step} {rank} {' '.join(str(int(i)) for i in idx)}\n")
            log.flush()
            state.step += 1
            state.commit()

    train(state)  # step() waited for the last values (server mode) or means
    torch.save(net.state_dict(), out / f"params-{hvd.rank()}.pt")
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    torch_mlp.exit_now(main(sys.argv))
