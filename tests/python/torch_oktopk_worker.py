"""torch_oktopk_worker: one worker of test_oktopk: torch_mlp's model trained through
DistributedOptimizer(SGD, mode="server", compression=ordo.torch.Compression.oktopk(DENSITY))
on a run whose conf says [push] mode = sparse; after every step it records its parameters
(flat, in named_parameters order) and at the end writes them, one row per step, to OUT.

    python torch_oktopk_worker.py OUT DENSITY [SPARSE]   (DENSITY "conf": Compression.oktopk();
                                                          SPARSE: init() sets push.mode = sparse)
"""
from __future__ import annotations

import sys

import ordo.torch as hvd
import torch
import torch_mlp


def main(out: str, density: str, sparse: bool) -> int:
    torch.set_num_threads(1)
    hvd.init(settings={"push.mode": "sparse", "push.density": density} if sparse else None)
    net = torch_mlp.model()
    comp = hvd.Compression.oktopk() if density == "conf" else \
        hvd.Compression.oktopk(float(density))
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer("server", net.parameters()),
                                   named_parameters=net.named_parameters(), mode="server",
                                   compression=comp)
    rank, size = hvd.rank(), hvd.size()
    xs, ys = torch_mlp.data()
    part = torch_mlp.BATCH // size
    rows = []
    for t in range(torch_mlp.ITERS):
        opt.zero_grad()
        x, y = xs[t, rank * part:(rank + 1) * part], ys[t, rank * part:(rank + 1) * part]
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
        rows.append(torch.cat([p.detach().flatten() for p in net.parameters()]).clone())
    torch.save(torch.stack(rows), out)
    hvd.shutdown()
    torch_mlp.exit_now(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:] == ["SPARSE"]))
