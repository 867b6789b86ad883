"""replan_worker: one worker of the re-plan test (test_replan.py).

Declares three tensors, runs one iteration (pull, push) under the start-up plan, then calls
Client.replan at the iteration boundary (rank 0 with the profile file PROFILE, or "-" for
none, the others with None) and prints the outcome as one JSON line ("replan: {...}"). After
a successful re-plan it runs ITERS more iterations whose pulls are requested in the reverse
of the new plan's order, so that the servers' traces show the enforcement reordering them.

    python replan_worker.py CONF PROFILE cluster.scheduler=tcp://HOST:PORT [key=value ...]
"""
from __future__ import annotations

import array
import json
import sys

import ordo

ITERS = 3
TENSORS = [("a", 65536), ("b", 256), ("c", 2560)]


def iteration(client: ordo.Client, vals: list, grads: list, order: list[int]) -> None:
    handles = [client.pull(k, vals[k], priority=client.priority(k)) for k in order]
    for h in handles:
        h.wait(timeout_ms=30000)
    for k in reversed(order):
        client.push(k, grads[k], priority=client.priority(k))
    client.wait_all(timeout_ms=30000)


def main(argv: list[str]) -> int:
    conf, profile_path = argv[1], argv[2]
    settings = dict(arg.split("=", 1) for arg in argv[3:])
    client = ordo.Client(conf, settings)
    for name, n in TENSORS:
        client.declare(name, n)
    client.join()
    rank = client.rank
    vals = [array.array("f", [0.0]) * n for _, n in TENSORS]
    grads = [array.array("f", [1.0]) * n for _, n in TENSORS]
    if rank == 0:
        for k in range(len(TENSORS)):
            client.init(k, vals[k])
    before = client.priorities()
    iteration(client, vals, grads, list(range(len(TENSORS))))
    profile = None
    if rank == 0 and profile_path != "-":
        with open(profile_path) as f:
            profile = f.read()
    try:
        after = client.replan(profile, timeout_ms=30000)
        out = {"before": before, "after": after}
    except ordo.OrdoError as e:
        out = {"before": before, "error": str(e), "code": e.code,
               "after": client.priorities()}
        after = None
    print("replan: " + json.dumps(out), flush=True)
    order = list(range(len(TENSORS)))
    if after is not None:  # request in the reverse of the plan's order
        order = sorted(order, key=lambda k: after[k], reverse=True)
    for _ in range(ITERS):  # the cluster goes on either way
        iteration(client, vals, grads, order)
    client.leave()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
