"""ordo.torch: PyTorch training through an ordo cluster, with the names of Horovod and BytePS.

    import ordo.torch as hvd            # was: import horovod.torch as hvd
    hvd.init()
    optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)

init() reads the conf the launcher gives ($ORDO_CONF, ORDO_* variables; scripts/ordo-launch
with [worker] command). The cluster is joined lazily, at the first transfer (a gradient, a
push_pull, a broadcast), because its tensors are fixed when the workers join: the
DistributedOptimizer declares the model's parameters, declare() adds others. A broadcast asked
for before any tensor is declared runs at the join. A DDP model trains through the servers
with model.register_comm_hook(None, ordo.torch.ddp_comm_hook). See docs/torch.md.
"""
from __future__ import annotations

import atexit
import os
from collections.abc import Iterable
from typing import Any

import torch

import ordo
from ordo.torch import collectives as _co
from ordo.torch import ddp as _ddp
from ordo.torch import horovod as _hvd
from ordo.torch import optimizer as _optimizer
from ordo.torch import residuals as _residuals
from ordo.torch import runtime as _rt
from ordo.torch.compression import Compressor as _Compressor
from ordo.torch.ddp import ddp_comm_hook
from ordo.torch.horovod import *  # noqa: F403 (Horovod's names: ordo/torch/horovod.py)
from ordo.torch.sampler import ElasticSampler
from ordo.torch.sync_batch_norm import SyncBatchNorm

__all__ = [
    "init", "shutdown", "is_initialized", "rank", "size", "local_rank", "local_size", "declare",
    "push_pull", "push_pull_async", "synchronize", "poll", "broadcast_parameters",
    "broadcast_optimizer_state", "broadcast_object", "DistributedOptimizer", "Handle",
    "ddp_comm_hook", "ElasticSampler", "SyncBatchNorm", "elastic", *_hvd.__all__,
]

_runtime: _rt.Runtime | None = None
Handle = _rt.PushPull


def _rt_or_raise() -> _rt.Runtime:
    if _runtime is None:
        raise RuntimeError("ordo.torch: call ordo.torch.init() first")
    return _runtime


def init(conf: str | None = None, settings: dict[str, Any] | None = None, *,
         comm: Any = None, process_sets: Any = None) -> None:
    """init makes this process a worker of the cluster its launcher started; nothing is
    connected until the first transfer (the join).

    Args:
        conf: the conf file (default $ORDO_CONF, which ordo-launch sets); ORDO_* variables
            override it
        settings: {"section.key": value}, applied last
        comm, process_sets: Horovod's; only None (every worker) can be served

    Raises:
        RuntimeError: no cluster to join: neither $ORDO_CONF nor $ORDO_CLUSTER_SCHEDULER
            (not started by ordo-launch)
        ValueError: an MPI communicator or process sets (ordo's workers are one set)
        OrdoError: a bad conf file or setting
    """
    global _runtime
    if comm is not None:
        raise ValueError("ordo.torch.init: comm= is an MPI communicator; ordo's workers are "
                         "the ones ordo-launch started (drop comm=)")
    for ps in (process_sets if isinstance(process_sets, list) else []):
        _co.check_process_set(ps, "init")
    if process_sets is not None and not isinstance(process_sets, list):
        raise ValueError(f"ordo.torch.init: process_sets={process_sets!r}: ordo's collectives "
                         "run over every worker (drop process_sets=)")
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
    atexit.register(_shutdown_at_exit)


def _shutdown_at_exit() -> None:
    """A worker still in the cluster at exit leaves it (Horovod scripts never call
    shutdown())."""
    if _runtime is not None:
        shutdown()


def is_initialized() -> bool:
    """is_initialized reports whether init() was called (and shutdown() not since).

    Returns:
        True between init() and shutdown().
    """
    return _runtime is not None


def shutdown() -> None:
    """shutdown waits for the transfers in flight and leaves the cluster (the run ends when
    every worker has left); a DDP comm hook's thread stops first. Without init() it does
    nothing.

    Raises:
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    global _runtime
    _ddp.reset()
    if _runtime is None:
        return
    r, _runtime = _runtime, None
    if r.joined:
        run_dir, rank_ = r.client.run_dir(), r.client.rank
        r.client.leave()
        _hvd.copy_timeline(run_dir, rank_)
    else:
        r.client.close()


def rank() -> int:
    """rank is this worker's rank (the launcher's before the join, then the cluster's;
    the same as torch.distributed's RANK under ordo-launch).

    Returns:
        0 .. size() - 1.

    Raises:
        RuntimeError: init() was not called, or the launcher assigned no rank and the
            cluster is not joined yet
    """
    return _rt_or_raise().rank()


def size() -> int:
    """size is the number of workers.

    Returns:
        [cluster] workers before the join, the cluster's after it.

    Raises:
        RuntimeError: init() was not called
    """
    return _rt_or_raise().size()


def local_rank() -> int:
    """local_rank is this worker's rank among the workers of its host.

    Returns:
        $ORDO_LOCAL_RANK (0 without it).
    """
    return int(os.environ.get("ORDO_LOCAL_RANK", "0"))


def local_size() -> int:
    """local_size is the number of workers on this host.

    Returns:
        $ORDO_LOCAL_SIZE (1 without it).
    """
    return int(os.environ.get("ORDO_LOCAL_SIZE", "1"))


def declare(name: str, tensor: torch.Tensor) -> None:
    """declare adds a tensor that push_pull will average under name; only before the
    first transfer (the join). push_pull declares unknown names itself while it can.

    Args:
        name: the name, the same on every worker
        tensor: a float32 contiguous CPU or CUDA tensor (its size is declared)

    Raises:
        TypeError, ValueError: a tensor ordo cannot move
        ValueError: name declared before
            with another size
        RuntimeError: init() was not called, or the cluster is
            joined already
    """
    _rt.check_tensor(tensor, f"tensor {name!r}")
    r = _rt_or_raise()
    r.refuse_in_groups("declare()")
    r.declare(name, tensor.numel())


def push_pull_async(tensor: torch.Tensor, name: str, average: bool = True,
                    priority: int | None = None) -> Handle:
    """push_pull_async starts averaging (or summing) tensor across the workers under name;
    the tensor must stay unchanged until synchronize().

    Args:
        tensor: a float32 contiguous CPU or CUDA tensor
        name: its name (declared here
            when new, before the join)
        average: the mean (True) or the sum (False)
        priority: its place in this worker's order, smaller first (default: the
            declaration index)

    Returns:
        A Handle for synchronize() and poll().

    Raises:
        TypeError, ValueError: a tensor ordo cannot move, or of another size than declared
        RuntimeError: init() was not called
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    return _rt_or_raise().push_pull_async(tensor, name, average, priority)


def synchronize(handle: Handle | _co.Done, timeout_ms: int = -1) -> Any:
    """synchronize waits for a push_pull_async and writes the result into its tensor; for a
    Horovod-style async collective (allreduce_async ...) it returns the collective's result.

    Args:
        handle: push_pull_async's Handle, or an async collective's
        timeout_ms: how long to wait; -1: no limit

    Returns:
        The tensor, now holding the result (the collective's result).

    Raises:
        Timeout: timeout_ms ran out (the transfer goes on)
        RuntimeError: init() was not called
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    if isinstance(handle, _co.Done):
        return handle.value
    return _rt_or_raise().synchronize(handle, timeout_ms)


def poll(handle: Handle | _co.Done) -> bool:
    """poll reports whether handle's push_pull completed.

    Args:
        handle: push_pull_async's Handle

    Returns:
        True when synchronize() would return at once.

    Raises:
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    if isinstance(handle, _co.Done):
        return True
    return handle.done or handle.handle.done()


def push_pull(tensor: torch.Tensor, name: str, average: bool = True,
              priority: int | None = None) -> torch.Tensor:
    """push_pull averages (or sums) tensor across the workers, in place.

    Args:
        tensor: a float32 contiguous CPU or CUDA tensor
        name: its name
        average: the mean (True) or the sum (False)
        priority: its place in this worker's order

    Returns:
        tensor, holding the result.

    Raises:
        TypeError, ValueError: a tensor ordo cannot move
        RuntimeError: init() was not called
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    return synchronize(push_pull_async(tensor, name, average, priority))


def broadcast_parameters(params: dict[str, torch.Tensor] | Iterable[tuple[str, torch.Tensor]],
                         root_rank: int = 0) -> None:
    """broadcast_parameters copies root_rank's tensors into every worker's, in place.
    Before any tensor is declared it runs at the join.

    Args:
        params: a state_dict (parameters and buffers, any dtype) or named_parameters()
        root_rank: the rank whose values are copied

    Raises:
        ValueError: the workers' state dicts hold different names
        RuntimeError: init() was not called
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    state = dict(params.items() if isinstance(params, dict) else params)
    r = _rt_or_raise()
    r.when_joined(lambda: r.broadcast_state(state, root_rank))


def broadcast_optimizer_state(optimizer: torch.optim.Optimizer, root_rank: int = 0,
                              model: torch.nn.Module | None = None) -> None:
    """broadcast_optimizer_state gives every worker root_rank's optimizer state and
    hyperparameters (optimizer.load_state_dict of root's state_dict).

    Args:
        optimizer: the optimizer, the same kind on every worker
        root_rank: the rank whose state is copied
        model: Horovod's (for its state made before the first step); not needed here

    Raises:
        RuntimeError: init() was not called
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    r = _rt_or_raise()

    def run() -> None:
        # error-feedback residuals are each rank's own: root's stay on root
        state = _residuals.without(optimizer.state_dict())
        optimizer.load_state_dict(r.broadcast_object(state, root_rank))

    r.when_joined(run)


def broadcast_object(obj: Any, root_rank: int = 0, name: str | None = None,
                     process_set: Any = None) -> Any:
    """broadcast_object returns root_rank's obj on every worker.

    Args:
        obj: anything torch.save takes (the others' is ignored)
        root_rank: the sending rank
        name: Horovod's name of the operation (unused)
        process_set: Horovod's; only every worker (the default) can be served

    Returns:
        root_rank's obj.

    Raises:
        RuntimeError: init() was not called
        OrdoError: the cluster's error (a dead peer, a refused declaration, ...)
    """
    _co.check_process_set(process_set, "broadcast_object")
    return _rt_or_raise().broadcast_object(obj, root_rank)


def DistributedOptimizer(optimizer: torch.optim.Optimizer,  # noqa: N802 (Horovod's name)
                         named_parameters: Iterable[tuple[str, torch.Tensor]] | None = None,
                         mode: str = "gradients", model: torch.nn.Module | None = None,
                         backward_passes_per_step: int = 1,
                         per_parameter: bool | None = None, *,
                         compression: Any = None, op: int | None = None,
                         gradient_predivide_factor: float = 1.0, num_groups: int = 0,
                         groups: Any = None, sparse_as_dense: bool = False,
                         process_set: Any = None) -> torch.optim.Optimizer:
    """DistributedOptimizer returns optimizer, still of its class, with its gradients
    averaged by the servers (mode="gradients": its own step then runs) or its SGD run on the
    servers (mode="server").

    Args:
        optimizer: the optimizer to wrap
        named_parameters: the model's named_parameters(): every optimized parameter,
            float32 (CPU or CUDA); None: model's, else Horovod's names by position in the
            optimizer's param groups (the same on every worker)
        mode: "gradients" or "server" (docs/torch.md, "Modes")
        model: lets ordo profile the model and plan the order of transfers (docs/torch.md)
        backward_passes_per_step: backward passes accumulated before each transfer
        per_parameter: in gradients mode with model=, update each parameter as its mean
            arrives (None: when the optimizer updates each parameter alone; True: an error
            for one that may couple parameters; False: the whole step at once)
        compression: the wire codec of every parameter's tensor (ordo.torch.Compression), or
            Compression.oktopk(density): the sparse path of the whole model (server mode, the
            conf's [push] mode = sparse; docs/torch.md, "Compression")
        op: Average (default) or Sum of the workers' gradients (gradients mode)
        gradient_predivide_factor: Horovod's: each push divided by it, the mean multiplied
            back (op=Average, gradients mode)
        num_groups, groups: Horovod's fusion groups; accepted and checked: ordo fuses pushes
            as the cluster's [push] mode and merge plan say (docs/merging.md), which leaves
            the values unchanged
        sparse_as_dense: accepted; ordo always pushes a sparse gradient densely
        process_set: Horovod's; only every worker (the default) can be served

    Returns:
        optimizer, whose step() waits for the averages (or the servers' values).

    Raises:
        ValueError: a parameter missing from named_parameters, a mode that is not known, in
            server mode an optimizer other than plain SGD, per_parameter=True with an
            optimizer that may couple parameters, op=Adasum (or Min, Max, Product), a
            process set of some workers, a codec this libordo lacks, or Compression.oktopk
            without server mode, the conf's [push] mode = sparse or its push.density
        RuntimeError: init() was not called
    """
    # Horovod's positional order (optimizer, named_parameters, compression,
    # backward_passes_per_step, ...): a Compressor or an int where ordo has mode and model
    if isinstance(mode, _Compressor):
        mode, compression = "gradients", mode
    if isinstance(model, int) and not isinstance(model, bool):
        model, backward_passes_per_step = None, model
    r = _rt_or_raise()
    opts = _optimizer.horovod_options(r, mode, compression, op, gradient_predivide_factor,
                                      num_groups, groups, process_set)
    return _optimizer.make(optimizer, r, named_parameters, mode, backward_passes_per_step,
                           model, per_parameter, opts)


from ordo.torch import elastic  # noqa: E402 (hvd.elastic, as horovod.torch has it)
