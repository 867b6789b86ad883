"""train_resnet18: torchvision's ResNet-18 (random initialisation, 1-channel input, 10 classes)
on Fashion-MNIST, trained by the workers of an ordo cluster.

    scripts/ordo-launch conf/torch_resnet18.ini     # [worker] command runs this script

ResNet-18 is the model of the ordering experiments: 62 tensors, 11.2 M parameters (45 MB a
step each way). --steps bounds the run (the default conf makes a short one); --mode gradients
averages the gradients for the local optimizer instead of running SGD on the servers.
"""
from __future__ import annotations

import argparse
import sys
import time

import fmnist  # the example's own reader, next to this script
import ordo.torch as hvd
import torch
import torchvision
from torch import nn


def resnet18() -> nn.Module:
    """resnet18 is torchvision's ResNet-18 with a 1-channel first convolution."""
    net = torchvision.models.resnet18(weights=None, num_classes=10)
    net.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return net


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps", type=int, default=0, help="stop after this many steps (0: all)")
    ap.add_argument("--batch", type=int, default=32, help="per worker")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--mode", choices=["server", "gradients"], default="server")
    ap.add_argument("--eval", type=int, default=2000, help="test samples evaluated")
    ap.add_argument("--threads", type=int, default=1, help="torch threads per worker")
    ap.add_argument("--device", default="cpu", help=fmnist.DEVICE_HELP)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    hvd.init()
    dev = fmnist.device(args.device, hvd.local_rank())
    torch.manual_seed(1)
    net = resnet18().to(dev)
    counts = torch.zeros(2)
    hvd.declare("eval.counts", counts)
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=0.9, weight_decay=5e-4)
    opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters(),
                                   mode=args.mode, model=net)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)  # BatchNorm's buffers too
    rank, size = hvd.rank(), hvd.size()

    x, y = fmnist.load("train")
    tx, ty = fmnist.load("t10k")
    x, y, tx, ty = x.to(dev), y.to(dev), tx.to(dev), ty.to(dev)
    loss_fn = nn.CrossEntropyLoss()
    steps = len(x) // (args.batch * size)
    if args.steps:
        steps = min(steps, args.steps)
    if rank == 0:
        n = sum(p.numel() for p in net.parameters())
        print(f"train_resnet18: {size} workers, {n / 1e6:.1f} M parameters, {steps} steps of "
              f"{args.batch} x {size} per epoch, mode {args.mode}, on {dev}", flush=True)
    for epoch in range(args.epochs):
        mine = torch.randperm(len(x), generator=torch.Generator().manual_seed(epoch))[rank::size]
        started, total = time.monotonic(), 0.0
        net.train()
        for s in range(steps):
            idx = mine[s * args.batch:(s + 1) * args.batch].to(dev)
            opt.zero_grad()
            loss = loss_fn(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
            total += loss.item()
            if rank == 0 and ((s + 1) % 10 == 0 or s + 1 == steps):
                rate = (s + 1) * args.batch * size / (time.monotonic() - started)
                print(f"train_resnet18: epoch {epoch + 1} step {s + 1}/{steps} loss "
                      f"{total / (s + 1):.4f} {rate:.0f} samples/s", flush=True)
        net.eval()
        with torch.no_grad():
            ex, ey = tx[:args.eval][rank::size], ty[:args.eval][rank::size]
            right = sum(int((net(ex[i:i + 500]).argmax(1) == ey[i:i + 500]).sum())
                        for i in range(0, len(ex), 500))
        counts.copy_(torch.tensor([float(right), float(len(ex))]))
        hvd.push_pull(counts, "eval.counts", average=False)
        if rank == 0:
            print(f"train_resnet18: epoch {epoch + 1}: loss {total / steps:.4f}, test accuracy "
                  f"{100 * float(counts[0] / counts[1]):.2f}% ({int(counts[1])} samples), "
                  f"{time.monotonic() - started:.1f} s", flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
