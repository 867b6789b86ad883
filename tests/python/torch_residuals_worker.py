"""torch_residuals_worker: one worker of test_torch_residuals.py. Trains torch_mlp's model in
gradients mode (Adam) with Compression.topk(0.1) and error feedback, steps FIRST .. LAST - 1 on
its half of each step's batch, then writes OUT/ckpt-RANK.pt (the model's and the optimizer's
state_dict) and OUT/params-RANK.pt. HOW says where the first step starts from: "fresh"
(torch_mlp's model), "resume" (IN/ckpt-RANK.pt, residuals included: after the run a second
load is refused, this worker pushed already) or "zeros" (IN/ckpt-RANK.pt without its
residuals). A state_dict after shutdown holds none, with a warning.

    python torch_residuals_worker.py IN OUT FIRST LAST HOW
"""
from __future__ import annotations

import sys
import warnings
from pathlib import Path

import ordo
import ordo.torch as hvd
import torch
import torch_mlp

RESIDUALS = "ordo_residuals"


def main(argv: list[str]) -> int:
    src, out = Path(argv[1]), Path(argv[2])
    first, last, how = int(argv[3]), int(argv[4]), argv[5]
    torch.set_num_threads(1)
    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    net = torch_mlp.model()
    opt = hvd.DistributedOptimizer(torch_mlp.optimizer("gradients", net.parameters()),
                                   named_parameters=net.named_parameters(),
                                   compression=hvd.Compression.topk(0.1))
    ckpt = torch.load(src / f"ckpt-{rank}.pt") if how != "fresh" else None
    if ckpt is not None:
        net.load_state_dict(ckpt["model"])
        if how == "zeros":
            del ckpt["optimizer"][RESIDUALS]
        opt.load_state_dict(ckpt["optimizer"])  # before the join: handed over at it
    xs, ys = torch_mlp.data()
    part = torch_mlp.BATCH // size
    for t in range(first, last):
        opt.zero_grad()
        x, y = xs[t, rank * part:(rank + 1) * part], ys[t, rank * part:(rank + 1) * part]
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    state = opt.state_dict()
    blob = state.get(RESIDUALS)
    print(f"torch_residuals_worker: rank {rank}: residuals of rank "
          f"{blob['rank'] if blob else None}, {len(blob['state']) if blob else 0} bytes",
          flush=True)
    torch.save({"model": net.state_dict(), "optimizer": state}, out / f"ckpt-{rank}.pt")
    torch.save(net.state_dict(), out / f"params-{rank}.pt")
    if how == "resume":
        try:
            opt.load_state_dict(ckpt["optimizer"])
            print("torch_residuals_worker: a second load: not refused", flush=True)
        except ordo.OrdoError as e:
            print(f"torch_residuals_worker: a second load: {e}", flush=True)
    hvd.shutdown()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        late = opt.state_dict()
    print(f"torch_residuals_worker: after shutdown: residuals {RESIDUALS in late}, "
          f"{[str(w.message) for w in caught]}", flush=True)
    return 0


if __name__ == "__main__":
    torch_mlp.exit_now(main(sys.argv))
