"""train_fmnist_elastic: the Fashion-MNIST CNN of train_fmnist.py, written as a Horovod elastic
user writes it (ordo.torch.elastic: TorchState, commit, run), so that a worker that dies is
started again and goes on where it stopped ([fault] worker = restart):

    scripts/ordo-launch --workers 3 --servers 2 --fault.worker=restart -- \\
        .venv/bin/python examples/torch/train_fmnist_elastic.py --steps 600

The servers run SGD with momentum (server mode): a restarted process gets the values from
the servers and its step from the cluster, and its data follows from the step (each epoch a
permutation seeded by the epoch, every size-th sample from rank), so the run ends with the
parameters it would have had without the fault. Worker 0 evaluates the whole test set at the
end and prints "train_fmnist_elastic: test accuracy X%"; with --out DIR it also saves the
parameters to DIR/params.pt.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import fmnist  # the example's own reader, next to this script
import ordo.torch as hvd
import torch
from ordo.torch import elastic
from torch import nn
from train_fmnist import cnn


def accuracy(net: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    net.eval()
    with torch.no_grad():
        right = sum(int((net(x[i:i + 1000]).argmax(1) == y[i:i + 1000]).sum())
                    for i in range(0, len(x), 1000))
    net.train()
    return right / len(x)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=900, help="iterations of the whole run")
    ap.add_argument("--batch", type=int, default=64, help="per worker")
    ap.add_argument("--lr", type=float, default=0.02)
    ap.add_argument("--momentum", type=float, default=0.9)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)

    hvd.init()
    torch.manual_seed(args.seed)  # every worker builds the same initial model
    net = cnn()
    opt = torch.optim.SGD(net.parameters(), lr=args.lr, momentum=args.momentum)
    opt = hvd.DistributedOptimizer(opt, named_parameters=net.named_parameters(), mode="server")
    state = elastic.TorchState(net, opt, step=0)
    x, y = fmnist.load("train")
    loss_fn = nn.CrossEntropyLoss()

    @elastic.run
    def train(state: elastic.TorchState) -> None:
        rank, size = hvd.rank(), hvd.size()
        per_epoch = len(x) // (args.batch * size)
        print(f"train_fmnist_elastic: rank {rank} starts at step {state.step}"
              f"{' (restarted)' if state.restarted else ''}", flush=True)
        started, order, epoch = time.monotonic(), None, -1
        for step in range(state.step, args.steps):
            state.step = step
            if step // per_epoch != epoch:
                epoch = step // per_epoch
                g = torch.Generator().manual_seed(args.seed * 1000 + epoch)
                order = torch.randperm(len(x), generator=g)[rank::size]
            s = step % per_epoch
            idx = order[s * args.batch:(s + 1) * args.batch]
            opt.zero_grad()
            loss = loss_fn(net(x[idx]), y[idx])
            loss.backward()
            opt.step()
            state.commit()
            if rank == 0 and (step + 1) % 100 == 0:
                print(f"train_fmnist_elastic: step {step + 1}/{args.steps} loss "
                      f"{loss.item():.4f}, {time.monotonic() - started:.1f} s", flush=True)

    train(state)
    opt.synchronize()  # the last step's values are in
    if hvd.rank() == 0:
        tx, ty = fmnist.load("t10k")
        print(f"train_fmnist_elastic: test accuracy {100 * accuracy(net, tx, ty):.2f}%",
              flush=True)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            torch.save(net.state_dict(), args.out / "params.pt")
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
