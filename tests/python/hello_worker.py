"""hello_worker: one worker of the Python client test, the Python twin of examples/hello_ordo.c.

Joins the cluster of examples/hello_ordo.ini through ordo.Client, declares its three tensors,
lets rank 0 set their initial values, and for ITERS iterations pushes a gradient of
(rank + 1) * (t + 1) in every element and pulls the result (push then pull, or one pushpull,
on alternate iterations), checking every value against v0 - t(t + 1)/2 * W(W + 1)/2 (exact
with lr = 1 and aggregate = sum). Buffers are array.array('f'), numpy arrays when numpy is
there. Prints "N values checked, M wrong" and exits 1 when a value was wrong.

    python hello_worker.py CONF cluster.scheduler=tcp://HOST:PORT
"""
from __future__ import annotations

import array
import sys

import ordo

ITERS = 4
TENSORS = [("layer1.weight", 65536), ("layer1.bias", 256), ("layer2.weight", 2560)]


def floats(n: int, value: float = 0.0) -> array.array:
    return array.array("f", [value]) * n


def main(argv: list[str]) -> int:
    settings = dict(arg.split("=", 1) for arg in argv[2:])
    client = ordo.Client(argv[1], settings)
    for name, n in TENSORS:
        client.declare(name, n)
    client.join()
    rank, size = client.rank, client.size
    print(f"hello_worker: worker {rank} of {size}, {client.num_servers} servers, "
          f"ordo {ordo.version()}", flush=True)
    vals = [floats(n) for _, n in TENSORS]
    grads = [floats(n) for _, n in TENSORS]
    if rank == 0:
        for k, (_, n) in enumerate(TENSORS):
            init = array.array("f", [float(i % 10 + k) for i in range(n)])
            client.init(k, init)
    handles = [client.pull(k, vals[k], priority=k) for k in range(len(TENSORS))]
    checked = wrong = 0
    for t in range(ITERS + 1):
        while not handles[0].done():
            pass
        for h in handles[1:]:
            h.wait(timeout_ms=30000)
        shift = t * (t + 1) // 2 * size * (size + 1) // 2
        for k, (name, n) in enumerate(TENSORS):
            v = vals[k]
            bad = [i for i in range(n) if v[i] != float(i % 10 + k - shift)]
            checked += n
            wrong += len(bad)
            for i in bad[:3]:
                print(f"hello_worker: {name}[{i}] = {v[i]} after {t} updates, "
                      f"expected {i % 10 + k - shift}", file=sys.stderr)
        if t == ITERS:
            break
        for k in reversed(range(len(TENSORS))):  # backward: the last layer's gradient first
            g = grads[k]
            for i in range(len(g)):
                g[i] = float((rank + 1) * (t + 1))
            if t % 2 == 0:
                client.push(k, g, priority=k)
                handles[k] = client.pull(k, vals[k], priority=k)
            else:
                handles[k] = client.pushpull(k, g, vals[k], priority=k)
    client.wait_all(timeout_ms=30000)
    client.barrier(timeout_ms=30000)
    print(f"hello_worker: worker {rank}: {ITERS} iterations, {checked} values checked, "
          f"{wrong} wrong", flush=True)
    if wrong:
        client.abort("pulled values were wrong")
        return 1
    client.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
