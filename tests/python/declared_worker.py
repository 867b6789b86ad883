"""declared_worker: one worker of a cluster whose tensors the workers declare.

With [model] trainer = declared the cluster's tensors are this program's: "avg" averaged
(ORDO_UPDATE_AVERAGE: a pull returns the mean of the workers' pushes), "sgd" updated on the
servers by torch.optim.SGD's rule with its own lr, momentum and weight decay, and "conf" by
the conf's [optimizer]. First a broadcast from the last rank gives every worker its bytes
(length first, then the bytes: Client.broadcast_bytes), and rank 0's initial values reach the
others through ordo_broadcast of a float32 array (rank 0 also inits the servers; a pull of
version 0 waits for that). Then ITERS iterations push a gradient of
(rank + 1) * (t + 1) + i % 7 in element i and pull every tensor, checking each value exactly
against the same arithmetic in float32 (numpy). Prints "N values checked, M wrong".

    python declared_worker.py CONF key=value ...
"""
from __future__ import annotations

import sys

import numpy as np
import ordo

ITERS = 5
LR, MOMENTUM, WD = 0.25, 0.9, 0.125
TENSORS = [("avg", 1000, "average"), ("sgd", 3000, "sgd"), ("conf", 500, "conf")]


def update(kind: str, w: np.ndarray, mom: np.ndarray, total: np.ndarray, scale: np.float32,
           conf_lr: float) -> tuple[np.ndarray, np.ndarray]:
    """update replays the servers' update of a tensor of kind from the sum of the workers'
    pushes, in float32 as they compute it: returns the new value and the sgd momentum (mom,
    unchanged for the other kinds)."""
    if kind == "average":
        return scale * total, mom
    if kind == "sgd":
        mom = np.float32(MOMENTUM) * mom + (scale * total + np.float32(WD) * w)
        return w - np.float32(LR) * mom, mom
    return w - np.float32(conf_lr) * (scale * total), mom


def main(argv: list[str]) -> int:
    settings = dict(arg.split("=", 1) for arg in argv[2:])
    client = ordo.Client(argv[1] if argv[1] != "-" else None, settings)
    for name, n, kind in TENSORS:
        k = client.declare(name, n)
        client.declare_update(k, kind, lr=LR, momentum=MOMENTUM, weight_decay=WD)
    client.join()
    rank, size = client.rank, client.size
    mean = settings.get("optimizer.aggregate", "mean") == "mean"
    conf_lr = float(settings.get("optimizer.lr", "1"))
    assert [t for t, _ in client.tensors()] == [t for t, _, _ in TENSORS], client.tensors()

    # broadcasts: bytes of another length on every rank, then the initial values
    note = client.broadcast_bytes(f"from worker {rank}".encode() * (rank + 1), root=size - 1,
                                  timeout_ms=30000)
    assert note == f"from worker {size - 1}".encode() * size, note
    init = [np.full(n, -1.0, dtype=np.float32) for _, n, _ in TENSORS]
    if rank == 0:
        for k, (_, n, _) in enumerate(TENSORS):
            init[k] = (np.arange(n, dtype=np.float32) % 13 - 6) / np.float32(8)
    for k in range(len(TENSORS)):
        client.broadcast(init[k], root=0, timeout_ms=30000)
    if rank == 0:
        for k, (_, _, kind) in enumerate(TENSORS):
            if kind != "average":
                client.init(k, init[k])

    # the first values: a pull of version 0 waits for rank 0's init (averaged tensors: zeros)
    first = [np.full(n, 7.0, dtype=np.float32) for _, n, _ in TENSORS]
    for k in range(len(TENSORS)):
        client.pull(k, first[k]).wait(30000)
        expect = 0 * init[k] if TENSORS[k][2] == "average" else init[k]
        assert np.array_equal(first[k], expect), (TENSORS[k][0], first[k][:4], expect[:4])
    w = [x.copy() for x in init]
    mom = np.zeros(TENSORS[1][1], dtype=np.float32)
    scale = np.float32(1.0 / size) if mean else np.float32(1.0)
    checked = wrong = 0
    vals = [np.zeros(n, dtype=np.float32) for _, n, _ in TENSORS]
    for t in range(ITERS):
        grads = []
        for k, (_, n, _) in enumerate(TENSORS):
            g = ((rank + 1) * (t + 1) + np.arange(n) % 7).astype(np.float32)
            grads.append(g)
            client.pushpull(k, g, vals[k], priority=k)
        client.wait_all(timeout_ms=30000)
        for k, (name, n, kind) in enumerate(TENSORS):
            total = np.zeros(n, dtype=np.float32)
            for r in range(size):  # the servers sum in worker order
                total = total + ((r + 1) * (t + 1) + np.arange(n) % 7).astype(np.float32)
            w[k], mom = update(kind, w[k], mom, total, scale, conf_lr)
            bad = np.nonzero(vals[k] != w[k])[0]
            checked += n
            wrong += len(bad)
            for i in bad[:3]:
                print(f"declared_worker: {name}[{i}] = {vals[k][i]!r} after {t + 1} updates, "
                      f"expected {w[k][i]!r}", file=sys.stderr)
    client.barrier(timeout_ms=30000)
    print(f"declared_worker: worker {rank} of {size}: {ITERS} iterations, {checked} values "
          f"checked, {wrong} wrong", flush=True)
    if wrong:
        client.abort("pulled values were wrong")
        return 1
    client.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
