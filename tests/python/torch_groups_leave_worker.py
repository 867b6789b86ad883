"""torch_groups_leave_worker: one worker of test_torch_groups' leave test: trains a one-layer
model of 8 MiB in host groups through DistributedOptimizer in server mode with model= (the
next values come back while the next forward pass would run), and leaves right after its last
step, with those values still on the (emulated, slow) link. The last rank waits SLEEP seconds
before it leaves, so the others' libraries are still running when the values arrive.

    python torch_groups_leave_worker.py SLEEP
"""
from __future__ import annotations

import sys
import time

import ordo.torch as hvd
import torch


def main(sleep_s: float) -> int:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    hvd.init()
    net = torch.nn.Sequential(torch.nn.Linear(1024, 2048))
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.01),
                                   named_parameters=net.named_parameters(), mode="server",
                                   model=net)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    rank, size = hvd.rank(), hvd.size()
    for _ in range(3):
        opt.zero_grad()
        net(torch.randn(4, 1024)).square().mean().backward()
        opt.step()
    if rank == size - 1:
        time.sleep(sleep_s)
    hvd.shutdown()
    print(f"torch_groups_leave_worker: rank {rank} left", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(float(sys.argv[1])))
