"""ordo.torch: PyTorch training through an ordo cluster, with the names of Horovod and BytePS.

    import ordo.torch as hvd            # was: import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

init() reads the conf the launcher gives ($ORDO_CONF, ORDO_* variables; scripts/ordo-launch
with [worker] command). The cluster is joined lazily, at the first transfer (a gradient, a
push_pull, a broadcast), because its tensors are fixed when the workers join: the
DistributedOptimizer declares the model's parameters, declare() adds others. A broadcast asked
for before any tensor is declared runs at the join. See docs/torch.md.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import torch

import ordo
from ordo.torch import optimizer as _optimizer
from ordo.torch import runtime as _rt

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size", "declare",
    "push_pull", "push_pull_async", "synchronize", "poll", "broadcast_parameters",
    "broadcast_optimizer_state", "broadcast_object", "DistributedOptimizer", "Handle",
]

_runtime: _rt.Runtime | None = None
Handle = _rt.PushPull


def _rt_or_raise() -> _rt.Runtime:
    if _runtime is None:
        raise RuntimeError("ordo.torch: call ordo.torch.init() first")
    return _runtime


def init(conf: str | None = None, settings: dict[str, Any] | None = None) -> None:
    """init makes this process a worker of the cluster its launcher started: conf (default
    $ORDO_CONF) and ORDO_* variables, then settings ("section.key": value). Nothing is
    connected until the first transfer. Raises RuntimeError when there is no cluster to join,
    OrdoError on a bad conf."""
    global _runtime
    if _runtime is not None:
        return
    conf = conf or os.environ.get("ORDO_CONF") or None
    settings = dict(settings or {})
    if conf is None and not os.environ.get("ORDO_CLUSTER_SCHEDULER") and \
            "cluster.scheduler" not in settings:
        raise RuntimeError("ordo.torch.init: no cluster to join: neither $ORDO_CONF nor "
                           "$ORDO_CLUSTER_SCHEDULER is set (start workers with "
                           "scripts/ordo-launch CONF, whose [worker] command runs this script)")
    client = ordo.Client(conf, settings)
    _runtime = _rt.Runtime(client, conf, settings)


def is_initialized() -> bool:
    """is_initialized reports whether init() was called (and shutdown() not since)."""
    return _runtime is not None


def shutdown() -> None:
    """shutdown waits for the transfers in flight and leaves the cluster (the run ends when
    every worker has left)."""
    global _runtime
    if _runtime is None:
        return
    r, _runtime = _runtime, None
    if r.joined:
        r.client.leave()
    else:
        r.client.close()


def rank() -> int:
    """rank is this worker's rank, 0 .. size() - 1 (the launcher's before the join)."""
    return _rt_or_raise().rank()


def size() -> int:
    """size is the number of workers."""
    return _rt_or_raise().size()


def local_rank() -> int:
    """local_rank is this worker's rank among the workers of its host ($ORDO_LOCAL_RANK)."""
    return int(os.environ.get("ORDO_LOCAL_RANK", "0"))


def local_size() -> int:
    """local_size is the number of workers on this host ($ORDO_LOCAL_SIZE)."""
    return int(os.environ.get("ORDO_LOCAL_SIZE", "1"))


def declare(name: str, tensor: torch.Tensor) -> None:
    """declare adds a tensor that push_pull will average under name; only before the first
    transfer (the join). push_pull declares unknown names itself while it can."""
    _rt.check_tensor(tensor, f"tensor {name!r}")
    _rt_or_raise().declare(name, tensor.numel())


def push_pull_async(tensor: torch.Tensor, name: str, average: bool = True,
                    priority: int | None = None) -> Handle:
    """push_pull_async starts averaging (average=False: summing) tensor across the workers
    under name; synchronize(handle) writes the result into tensor. Lower priorities leave
    first (default: the tensor's declaration index). tensor must stay unchanged meanwhile."""
    return _rt_or_raise().push_pull_async(tensor, name, average, priority)


def synchronize(handle: Handle, timeout_ms: int = -1) -> torch.Tensor:
    """synchronize waits for a push_pull_async and returns its tensor, now holding the
    result."""
    return _rt_or_raise().synchronize(handle, timeout_ms)


def poll(handle: Handle) -> bool:
    """poll reports whether handle's push_pull completed (synchronize then returns at once)."""
    return handle.done or handle.handle.done()


def push_pull(tensor: torch.Tensor, name: str, average: bool = True,
              priority: int | None = None) -> torch.Tensor:
    """push_pull averages (sums) tensor across the workers in place and returns it."""
    return synchronize(push_pull_async(tensor, name, average, priority))


def broadcast_parameters(params: dict[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
                         root_rank: int = 0) -> None:
    """broadcast_parameters copies root_rank's tensors into every worker's, in place: a
    state_dict (parameters and buffers, any dtype) or named_parameters(). Before any tensor
    is declared it runs at the join."""
    state = dict(params.items() if isinstance(params, dict) else params)
    r = _rt_or_raise()
    r.when_joined(lambda: r.broadcast_state(state, root_rank))


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int = 0) -> None:
    """broadcast_optimizer_state gives every worker root_rank's optimizer state and
    hyperparameters (optimizer.load_state_dict of root's state_dict)."""
    r = _rt_or_raise()

    def run() -> None:
        optimizer.load_state_dict(r.broadcast_object(optimizer.state_dict(), root_rank))

    r.when_joined(run)


def broadcast_object(obj: Any, root_rank: int = 0) -> Any:
    """broadcast_object returns root_rank's obj (anything torch.save takes) on every
    worker."""
    return _rt_or_raise().broadcast_object(obj, root_rank)


def DistributedOptimizer(optimizer: torch.optim.Optimizer,  # noqa: N802 (Horovod's name)
                         named_parameters: Iterable[tuple[str, torch.Tensor]] | None = None,
                         mode: str = "gradients", model: torch.nn.Module | None = None,
                         backward_passes_per_step: int = 1,
                         per_parameter: bool | None = None) -> torch.optim.Optimizer:
    """DistributedOptimizer returns optimizer (still of its class) with its gradients averaged
    by the servers (mode="gradients": then its own step runs) or its SGD run on the servers
    (mode="server"). Every optimized parameter must be in named_parameters, float32 on the CPU.
    model= lets ordo profile the model and plan the order of transfers (docs/torch.md); in
    gradients mode each parameter is then updated as its mean arrives, unless per_parameter is
    False or the optimizer may couple parameters (per_parameter=True makes that an error)."""
    return _optimizer.make(optimizer, _rt_or_raise(), named_parameters, mode,
                           backward_passes_per_step, model, per_parameter)
