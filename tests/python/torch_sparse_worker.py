"""torch_sparse_worker: one worker of a push.mode = sparse run from PyTorch: trains torch_mlp's
model through DistributedOptimizer (server mode: the sparse servers run the SGD the workers
declared) and prints the loss on the whole data before and after.

    python torch_sparse_worker.py
"""
from __future__ import annotations

import sys

import ordo.torch as hvd
import torch
import torch_mlp


def loss(net: torch.nn.Module) -> float:
    xs, ys = torch_mlp.data()
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(net(xs.flatten(0, 1)), ys.flatten(0, 1)))


def main() -> int:
    torch.set_num_threads(1)
    hvd.init()
    net = torch_mlp.model()
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer("server", net.parameters()),
                                   named_parameters=net.named_parameters(), mode="server")
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    before = loss(net)
    for _ in range(4):
        torch_mlp.train(net, opt, hvd.rank(), hvd.size())
    print(f"torch_sparse_worker: loss {before:.6f} -> {loss(net):.6f}", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
