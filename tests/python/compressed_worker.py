"""compressed_worker: one worker of a declared-tensor cluster whose pushes and pulls go in a
compressed wire type, checked against a single-process replay (wire_ref.py) of every worker's
encoding (with error feedback), the servers' float32 sums and updates, and the pull's rounding.

Tensors: "avg" (a pull returns the mean of the pushes), "sgd" (SGD with momentum and weight
decay on the servers) and "conf" (the conf's [optimizer]), each declared with CODEC. ITERS
iterations push a pseudo-random gradient (a seed of rank, iteration and tensor, so every
worker can replay every other's) and pull every tensor; each value is compared with the
replay ($COMPRESSED_BIG puts values that large into one gradient). Prints "N values
checked, M wrong, largest relative difference D".

    python compressed_worker.py CODEC CONF key=value ...
"""
from __future__ import annotations

import os
import sys

import numpy as np
import ordo
import wire_ref
from declared_worker import LR, MOMENTUM, WD, update

ITERS = 6
TENSORS = [("avg", 1000, "average"), ("sgd", 3000, "sgd"), ("conf", 517, "conf")]


# $COMPRESSED_BIG: tensor "avg"'s gradients are this large at iteration 2 (fp16's range)
BIG = float(os.environ.get("COMPRESSED_BIG", "0"))


def grad(rank: int, t: int, k: int, n: int) -> np.ndarray:
    rng = np.random.default_rng(1000 * rank + 10 * t + k)
    g = (rng.standard_normal(n) * (1 + k)).astype(np.float32)
    if BIG and k == 0 and t == 2:
        g[:3] = np.float32(BIG)
    return g


def main(argv: list[str]) -> int:
    codec = argv[1]
    settings = dict(arg.split("=", 1) for arg in argv[3:])
    client = ordo.Client(argv[2] if argv[2] != "-" else None, settings)
    for name, n, kind in TENSORS:
        k = client.declare(name, n)
        client.declare_update(k, kind, lr=LR, momentum=MOMENTUM, weight_decay=WD)
        client.declare_compression(k, codec)
    client.join()
    rank, size = client.rank, client.size
    conf_lr = float(settings.get("optimizer.lr", "1"))
    init = [((np.arange(n, dtype=np.float32) % 13 - 6) / np.float32(8)) for _, n, _ in TENSORS]
    if rank == 0:
        for k, (_, _, kind) in enumerate(TENSORS):
            if kind != "average":
                client.init(k, init[k])
    senders = [[wire_ref.Sender(codec, n, size) for _, n, _ in TENSORS] for _ in range(size)]
    pullers = [wire_ref.Puller(codec, n) for _, n, _ in TENSORS]
    # the first values: a pull of version 0 waits for rank 0's init (a push may not come
    # before it); averaged tensors read zeros. It is the first answer of each slice's pulls.
    for k, (name, n, kind) in enumerate(TENSORS):
        first = np.full(n, 7.0, dtype=np.float32)
        client.pull(k, first).wait(30000)
        expect = pullers[k].pull(0 * init[k] if kind == "average" else init[k], 0)
        if not np.array_equal(first, expect):
            client.abort(f"{name}: version 0 read {first[:4]}, expected {expect[:4]}")
            return 1
    w = [x.copy() for x in init]
    mom = np.zeros(TENSORS[1][1], dtype=np.float32)
    scale = np.float32(1.0 / size)
    checked = wrong = 0
    worst = 0.0
    vals = [np.zeros(n, dtype=np.float32) for _, n, _ in TENSORS]
    for t in range(ITERS):
        grads = [grad(rank, t, k, n) for k, (_, n, _) in enumerate(TENSORS)]
        for k in range(len(TENSORS)):  # the library reads grads[k] until the push is done
            client.pushpull(k, grads[k], vals[k], priority=k)
        client.wait_all(timeout_ms=30000)
        for k, (name, n, kind) in enumerate(TENSORS):
            total = np.zeros(n, dtype=np.float32)
            for r in range(size):  # the servers sum in worker order what they decoded
                total = total + senders[r][k].send(grad(r, t, k, n), seed=t)
            w[k], mom = update(kind, w[k], mom, total, scale, conf_lr)
            expect = pullers[k].pull(w[k], t + 1)
            rel = np.abs(vals[k] - expect) / np.maximum(np.abs(expect), np.float32(1e-30))
            worst = max(worst, float(rel.max()))
            bad = np.nonzero(rel > 1e-6)[0]
            checked += n
            wrong += len(bad)
            for i in bad[:3]:
                print(f"compressed_worker: {name}[{i}] = {vals[k][i]!r} after {t + 1} updates, "
                      f"expected {expect[i]!r}", file=sys.stderr)
    client.barrier(timeout_ms=30000)
    print(f"compressed_worker: worker {rank} of {size}, {codec}: {ITERS} iterations, {checked} "
          f"values checked, {wrong} wrong, largest relative difference {worst:.3g}", flush=True)
    if wrong:
        client.abort("pulled values were wrong")
        return 1
    client.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
