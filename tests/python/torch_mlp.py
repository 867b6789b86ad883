"""torch_mlp: the small model, data and optimizers of the ordo.torch equivalence tests, shared by
the workers (torch_worker.py) and the single-process reference run (test_torch.py)."""
from __future__ import annotations

import os
import sys

import torch

ITERS = 30
BATCH = 16  # the global batch; each of W workers takes its contiguous 1/W of it
SIZES = [("0.weight", 16 * 8), ("0.bias", 16), ("2.weight", 4 * 16), ("2.bias", 4)]


def model() -> torch.nn.Module:
    """model is a 2-layer MLP with a fixed initialisation."""
    torch.manual_seed(1)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 4))


def data() -> tuple[torch.Tensor, torch.Tensor]:
    """data is ITERS batches of inputs and targets, fixed."""
    g = torch.Generator().manual_seed(2)
    return torch.randn(ITERS, BATCH, 8, generator=g), torch.randn(ITERS, BATCH, 4, generator=g)


def optimizer(mode: str, params) -> torch.optim.Optimizer:
    """optimizer is Adam for mode gradients, SGD with momentum and weight decay for server."""
    if mode == "gradients":
        return torch.optim.Adam(params, lr=0.01)
    return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=0.01)


def train(net: torch.nn.Module, opt: torch.optim.Optimizer, rank: int, size: int,
          device: str = "cpu", iters: int = ITERS) -> None:
    """train runs iters steps on this rank's part of each batch (mean squared error)."""
    xs, ys = (t.to(device) for t in data())
    part = BATCH // size
    for t in range(iters):
        x = xs[t, rank * part:(rank + 1) * part]
        y = ys[t, rank * part:(rank + 1) * part]
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()


def exit_now(code: int) -> None:
    """exit_now ends a worker that ordo-launch started once it left the cluster: output
    flushed, then os._exit, without the interpreter's teardown of PyTorch's modules (1.5 s of
    CPU per process here, which the launcher would wait for)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
