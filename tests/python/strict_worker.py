"""strict_worker: one worker of test_torch's strict-enforcement test: trains torch_mlp's model
through DistributedOptimizer(model=net) (the real profiler and re-plan) with a tensor of its
own declared first and transferred once, after the plan (an evaluation's counts, as the
examples' eval.counts): under [order] enforce = strict every step must still end.

    python strict_worker.py MODE
"""
from __future__ import annotations

import sys

import ordo.torch as hvd
import torch
import torch_mlp


def main(mode: str) -> int:
    torch.set_num_threads(1)
    hvd.init()
    net = torch_mlp.model()
    counts = torch.zeros(2)
    hvd.declare("eval.counts", counts)  # index 0: the plan's stand-in goes first
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer(mode, net.parameters()),
                                   named_parameters=net.named_parameters(), mode=mode,
                                   model=net)
    rank, size = hvd.rank(), hvd.size()
    for step in range(3):  # 3 x 4 steps: the plan comes after 6 (1 warm-up + 5 profiled)
        torch_mlp.train(net, opt, rank, size, iters=4)
        if step == 1:
            counts.copy_(torch.tensor([float(rank + 1), 1.0]))
            hvd.push_pull(counts, "eval.counts", average=False)
    print(f"strict: 12 steps, counts {counts.tolist()}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
