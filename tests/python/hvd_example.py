"""hvd_example: runs one of Horovod's example scripts (horovod_examples/, its import rewritten
by test_horovod_examples.py) as an ordo worker, then writes what the test compares with one
process to OUT/rank{R}.pt: the parameters of the optimizer the script wrapped, and the
script's module-level data and target (the synthetic benchmarks').

    python hvd_example.py OUT SCRIPT [ARGS...]

Before the script runs, torch's seed is 1000 + rank (a script that seeds itself, as the MNIST
example does, overrides it), so each rank draws its own model and data and the test can draw
them again. The runner only watches DistributedOptimizer (it keeps the optimizer it returns);
the script runs unchanged with its arguments.
"""
from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

import ordo.torch
import torch
import torch_mlp


def main(out: Path, script: str, args: list[str]) -> int:
    rank = int(os.environ["ORDO_CLUSTER_RANK"])
    torch.manual_seed(1000 + rank)
    made = []
    real = ordo.torch.DistributedOptimizer

    def watched(*a, **k):  # noqa: ANN002, ANN003 (Horovod's arguments, passed on)
        opt = real(*a, **k)
        made.append(opt)
        return opt

    ordo.torch.DistributedOptimizer = watched
    sys.argv = [script, *args]
    g = runpy.run_path(script, run_name="__main__")
    params = [p.detach().clone() for grp in made[0].param_groups for p in grp["params"]]
    torch.save({"params": params, "data": g.get("data"), "target": g.get("target")},
               out / f"rank{rank}.pt")
    ordo.torch.shutdown()
    torch_mlp.exit_now(0)
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]), sys.argv[2], sys.argv[3:]))
