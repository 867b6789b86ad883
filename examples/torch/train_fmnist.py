"""train_fmnist: a CNN on Fashion-MNIST, trained by the workers of an ordo cluster.

The script of a Horovod user with the import changed. Launch it as every worker of a cluster:

    scripts/ordo-launch conf/torch_fmnist.ini     # [worker] command runs this script

Each worker trains on its share of every epoch's shuffled samples; the servers run SGD
(--mode server, default) or average the gradients for the local optimizer (--mode gradients).
After each epoch the workers evaluate half of the test set each and push_pull the counts.
"""
from __future__ import annotations

import argparse
import sys
import time

import fmnist  # the example's own reader, next to this script
import ordo.torch as hvd
import torch
from torch import nn


def cnn() -> nn.Module:
    """cnn is conv5x5(16)-relu-pool, conv5x5(32)-relu-pool, fc 1568-128, fc 128-10 (the
    built-in C CNN of conf/cnn.ini)."""
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(32 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


def evaluate(net: nn.Module, x: torch.Tensor, y: torch.Tensor, counts: torch.Tensor,
             dev: str) -> float:
    """evaluate counts this worker's share of the test set right and pushes the counts; it
    returns the accuracy over the whole test set."""
    rank, size = hvd.rank(), hvd.size()
    net.eval()
    with torch.no_grad():
        xs, ys = x[rank::size].to(dev), y[rank::size].to(dev)
        right = sum(int((net(xs[i:i + 1000]).argmax(1) == ys[i:i + 1000]).sum())
                    for i in range(0, len(xs), 1000))
    net.train()
    counts.copy_(torch.tensor([float(right), float(len(xs))]))
    hvd.push_pull(counts, "eval.counts", average=False)
    return float(counts[0] / counts[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64, help="per worker")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--mode", choices=["server", "gradients"], default="server")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    ap.add_argument("--device", default="cpu", help=fmnist.DEVICE_HELP)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    hvd.init()
    dev = fmnist.device(args.device, hvd.local_rank())
    torch.manual_seed(args.seed)
    net = cnn().to(dev)
    counts = torch.zeros(2)
    hvd.declare("eval.counts", counts)  # every tensor is declared before the first transfer
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters(),
                                   mode=args.mode, model=net)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    rank, size = hvd.rank(), hvd.size()

    x, y = fmnist.load("train")
    x, y = x.to(dev), y.to(dev)
    tx, ty = fmnist.load("t10k")
    loss_fn = nn.CrossEntropyLoss()
    steps = len(x) // (args.batch * size)
    if rank == 0:
        print(f"train_fmnist: {size} workers, {steps} steps of {args.batch} x {size} per "
              f"epoch, mode {args.mode}, on {dev}", flush=True)
    for epoch in range(args.epochs):
        order = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))
        mine = order[rank::size]
        started, seen, total = time.monotonic(), 0, 0.0
        for s in range(steps):
            idx = mine[s * args.batch:(s + 1) * args.batch].to(dev)
            opt.zero_grad()
            loss = loss_fn(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
            seen += len(idx)
            total += loss.item()
            if rank == 0 and (s + 1) % 100 == 0:
                print(f"train_fmnist: epoch {epoch + 1} step {s + 1}/{steps} loss "
                      f"{total / (s + 1):.4f} {seen * size / (time.monotonic() - started):.0f} "
                      "samples/s", flush=True)
        acc = evaluate(net, tx, ty, counts, dev)
        if rank == 0:
            print(f"train_fmnist: epoch {epoch + 1}: loss {total / steps:.4f}, test accuracy "
                  f"{100 * acc:.2f}%, {time.monotonic() - started:.1f} s", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
