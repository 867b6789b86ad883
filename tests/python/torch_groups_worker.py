"""torch_groups_worker: one worker of the ordo.torch host-group tests: trains torch_mlp's model
through DistributedOptimizer in MODE with the conf's host groups and writes its final
parameters to OUT.

    python torch_groups_worker.py MODE OUT [gate] [cuda] [bf16] [spare] [slow] [kill:RANK:ITER]

With "gate", DistributedOptimizer gets model= (each module's forward waits for its own values)
and the parameters last layer first (so the profile's re-plan changes the join's order).
With "cuda", the model and the batches are on GPU rank % 2 (a group's members on two GPUs).
With "bf16", every parameter's tensor goes in bf16 on the wire (compression=).
With "spare", the optimizer also has spare(), a parameter outside the model (no gradient, no
module's forward waits for it: every step pushes zeros for it from step(); SPARE_N floats, so
that on a slow link its push is still on the wire when the next step pushes it again), saved
as "spare".
With "slow", rank 1 sleeps SLOW_S before each backward (its group's other member ends each
step first and zeroes its gradients while the group still waits for rank 1's).
With kill:RANK:ITER, worker RANK SIGKILLs itself at the start of step ITER (the others must
fail naming it). It prints how many steps found every CPU .grad in the library's gradient
buffer (the group's shared memory: nothing copied on the way out) and, as JSON, each
parameter's priority after the join and at the end (with model=: the re-plan's).
"""
from __future__ import annotations

import json
import os
import signal
import sys
import time

import ordo.torch as hvd
import torch
import torch_mlp

SPARE_N = 100_000


def spare() -> torch.Tensor:
    """spare is the spare parameter's initial value."""
    return torch.linspace(-1.0, 1.0, SPARE_N)

SLOW_S = 0.03


def main(mode: str, out: str, gate: bool, cuda: bool, kill: tuple[int, int] | None,
         bf16: bool = False, with_spare: bool = False, slow: bool = False) -> int:
    torch.set_num_threads(1)
    hvd.init()
    device = torch.device("cuda", hvd.rank() % 2) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    net = torch_mlp.model().to(device)
    if hvd.rank() != 0:
        with torch.no_grad():  # the broadcast (or the servers' values) must undo this
            for p in net.parameters():
                p.add_(1.0)
    # with model=, the tensors are declared last layer first: the join's plan (no op times)
    # orders them so, the re-plan from the profile in forward order
    named = list(net.named_parameters())
    extra = torch.nn.Parameter(spare()) if with_spare else None
    if extra is not None:
        named.append(("spare", extra))
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer(mode, [p for _, p in named]),
                                   named_parameters=named[::-1] if gate else named, mode=mode,
                                   model=net if gate else None,
                                   compression=hvd.Compression.bf16 if bf16 else None)
    client = opt._ordo_rt.client
    print("torch_groups_worker: join priorities " + json.dumps(
        {q.name: client.priority(q.tensor.index) for q in opt._ordo_params}), flush=True)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)  # through the bound model
    hvd.broadcast_optimizer_state(opt, root_rank=0)
    xs, ys = (t.to(device) for t in torch_mlp.data())
    rank, size = hvd.rank(), hvd.size()
    part = torch_mlp.BATCH // size
    in_place = 0
    iters = torch_mlp.ITERS if kill is None else 10_000
    for t in range(iters):
        if kill is not None and rank == kill[0] and t == kill[1]:
            print(f"torch_groups_worker: rank {rank}: SIGKILL at step {t}", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        x = xs[t % torch_mlp.ITERS, rank * part:(rank + 1) * part]
        y = ys[t % torch_mlp.ITERS, rank * part:(rank + 1) * part]
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(x), y)
        if slow and rank == 1:
            time.sleep(SLOW_S)
        loss.backward()
        in_place += all(q.param.grad.data_ptr() == getattr(q, "gview", q.param).data_ptr()
                        for q in opt._ordo_params)
        opt.step()
    print(f"torch_groups_worker: rank {rank} of {size}: {iters} steps, grads in the "
          f"library's buffer in {in_place}", flush=True)
    # the priorities the transfers carried last (after a re-plan: the new plan's)
    print("torch_groups_worker: end priorities " + json.dumps(
        {q.name: client.priority(q.tensor.index) for q in opt._ordo_params}), flush=True)
    final = {k: v.cpu() for k, v in net.state_dict().items()}  # (gated: waits for all values)
    if extra is not None:
        final["spare"] = extra.detach().clone()
    torch.save(final, out)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    kills = [a for a in args[2:] if a.startswith("kill:")]
    kill = tuple(int(x) for x in kills[0].split(":")[1:]) if kills else None
    sys.exit(main(args[0], args[1], "gate" in args[2:], "cuda" in args[2:], kill,  # type: ignore[arg-type]
                  "bf16" in args[2:], "spare" in args[2:], "slow" in args[2:]))
