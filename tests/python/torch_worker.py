"""torch_worker: one worker of the ordo.torch equivalence test: trains torch_mlp's model through
ordo.torch.DistributedOptimizer in MODE and writes its final parameters to OUT.

    python torch_worker.py MODE OUT [DEVICE [plan]]

With "plan", DistributedOptimizer gets model= and fake_plan's stand-ins of the profiler and
the re-plan (the planned order's seam), and broadcast_parameters comes before it.
"""
from __future__ import annotations

import sys

import fake_plan
import ordo.torch as hvd
import torch
import torch_mlp


def refused_lr_change(net: torch.nn.Module, opt: torch.optim.Optimizer, device: str) -> str:
    """refused_lr_change steps once more with a doubled lr, which server mode refuses."""
    opt.param_groups[0]["lr"] *= 2
    try:
        torch_mlp.train(net, opt, hvd.rank(), hvd.size(), device, iters=1)
    except ValueError as e:
        return str(e)
    return "not refused"


def main(mode: str, out: str, device: str, plan: bool) -> int:
    torch.set_num_threads(1)
    if plan:
        fake_plan.install()
    hvd.init()
    net = torch_mlp.model().to(device)
    if hvd.rank() != 0:
        with torch.no_grad():  # the broadcast (or the servers' values) must undo this
            for p in net.parameters():
                p.add_(1.0)
    if plan:  # the other order Horovod scripts use: runs when the optimizer joins
        hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    check = torch.full((3,), float(hvd.rank() + 1), device=device)
    hvd.declare("check", check)  # a tensor of the program's own, averaged by push_pull
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer(mode, net.parameters()),
                                   named_parameters=net.named_parameters(), mode=mode,
                                   model=net if plan else None)
    if not plan:
        hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    torch_mlp.train(net, opt, hvd.rank(), hvd.size(), device)
    mean = hvd.push_pull(check.clone(), "check").tolist()
    total = hvd.synchronize(hvd.push_pull_async(check.clone(), "check", average=False)).tolist()
    assert mean == [1.5] * 3 and total == [3.0] * 3, (mean, total)
    print(f"torch_worker: push_pull: mean {mean[0]}, sum {total[0]}", flush=True)
    if plan:
        print(f"torch_worker: plan: {fake_plan.CALLS[0]}, {len(fake_plan.CALLS) - 1} gate waits, "
              f"priorities {[q.priority for q in opt._ordo_params]}", flush=True)
    torch.save({k: v.cpu() for k, v in net.state_dict().items()}, out)
    if mode == "server":  # the servers keep the hyperparameters of the join
        print(f"torch_worker: lr change: {refused_lr_change(net, opt, device)}", flush=True)
    print(f"torch_worker: rank {hvd.rank()} of {hvd.size()}: {torch_mlp.ITERS} iterations",
          flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    args = sys.argv[1:] + ["cpu"]
    sys.exit(main(args[0], args[1], args[2], "plan" in args[3:]))
