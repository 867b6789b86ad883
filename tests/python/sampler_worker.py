"""sampler_worker: one worker of the ElasticSampler test. Joins the cluster through
ordo.torch, reads EPOCHS epochs of a 100-sample data set through a DataLoader (2 loader
processes) with an ElasticSampler, sleeping SLOW seconds per batch (argv[2]), and prints the
indices it read per epoch as one JSON line: {"rank": r, "epochs": [[...], [...]]}.

    python sampler_worker.py EPOCHS SLOW
"""
from __future__ import annotations

import json
import sys
import time

import ordo.torch as hvd
import torch
from torch.utils.data import DataLoader, Dataset

N = 100


class Indices(Dataset):
    """Indices: sample i is i."""

    def __len__(self) -> int:
        return N

    def __getitem__(self, i: int) -> int:
        return i


def main(argv: list[str]) -> int:
    epochs, slow = int(argv[1]), float(argv[2])
    hvd.init()
    hvd.declare("w", torch.zeros(1))
    sampler = hvd.ElasticSampler(Indices(), shuffle=True, seed=5, batch_size=10)
    loader = DataLoader(Indices(), batch_size=10, sampler=sampler, num_workers=2)
    seen = []
    for e in range(epochs):
        sampler.set_epoch(e)
        got = []
        for batch in loader:
            got += [int(i) for i in batch]
            time.sleep(slow)
        seen.append(got)
    print(json.dumps({"rank": hvd.rank(), "epochs": seen}), flush=True)
    hvd.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
