"""horovod: the rest of horovod.torch's names on ordo.torch, with Horovod's signatures: the
collectives (over ordo.torch.collectives), join, the *_built queries, timelines, the host
counts and process sets; and BytePS's byteps_push_pull, suspend and resume. ordo.torch
re-exports them; docs/torch.md has the table of every Horovod and BytePS name with ordo's
answer.
"""
from __future__ import annotations

import os
import shutil
from typing import Any

import torch

from ordo.torch import collectives as co
from ordo.torch.collectives import (
    Adasum,
    Average,
    Done,
    HorovodInternalError,
    HostsUpdatedInterrupt,
    Max,
    Min,
    ProcessSet,
    Product,
    Sum,
    global_process_set,
)
from ordo.torch.compression import Compression

__all__ = [
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "Compression", "ProcessSet",
    "global_process_set", "add_process_set", "remove_process_set", "HorovodInternalError",
    "HostsUpdatedInterrupt", "allreduce", "allreduce_async", "allreduce_", "allreduce_async_",
    "grouped_allreduce", "grouped_allreduce_async", "grouped_allreduce_",
    "grouped_allreduce_async_", "sparse_allreduce_async", "allgather", "allgather_async",
    "grouped_allgather", "grouped_allgather_async", "broadcast", "broadcast_async",
    "broadcast_", "broadcast_async_", "alltoall", "alltoall_async", "reducescatter",
    "reducescatter_async", "grouped_reducescatter", "grouped_reducescatter_async",
    "allgather_object", "barrier", "join", "start_timeline", "stop_timeline", "cross_rank",
    "cross_size", "is_homogeneous", "mpi_threads_supported", "mpi_enabled", "mpi_built",
    "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built",
    "rocm_built", "suspend", "resume", "byteps_push_pull",
]

_PS = global_process_set


# ---- autograd: Horovod's allreduce, allgather and broadcast are differentiable -----------

def _grad_wanted(t: torch.Tensor) -> bool:
    return torch.is_grad_enabled() and t.requires_grad


class _Allreduce(torch.autograd.Function):
    """_Allreduce: the backward of a mean (sum) over the ranks is the mean (sum) of the
    ranks' output gradients, scaled as the forward was."""

    @staticmethod
    def forward(ctx: Any, t: torch.Tensor, name: str | None, op: int, pre: float,
                post: float) -> torch.Tensor:
        ctx.op, ctx.scale = op, pre * post
        return co.grouped_allreduce_values([t], name, op, pre, post, "allreduce")[0]

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Any:
        out = co.grouped_allreduce_values([g.contiguous()], None, ctx.op, ctx.scale, 1.0,
                                          "allreduce.backward")[0]
        return out, None, None, None, None


class _Allgather(torch.autograd.Function):
    """_Allgather: the backward sums the ranks' output gradients and keeps this rank's
    rows."""

    @staticmethod
    def forward(ctx: Any, t: torch.Tensor, name: str | None) -> torch.Tensor:
        rows = co.allgather_object(int(t.shape[0]), "allgather.rows")
        ctx.start = sum(rows[:co._runtime("allgather").client.rank])
        ctx.rows = int(t.shape[0])
        return co.grouped_allgather_values([t], name, "allgather")[0]

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Any:
        total = co.grouped_allreduce_values([g.contiguous()], None, Sum, 1.0, 1.0,
                                            "allgather.backward")[0]
        return total[ctx.start:ctx.start + ctx.rows], None


class _Broadcast(torch.autograd.Function):
    """_Broadcast: the root's gradient is the mean of the ranks' output gradients, the
    others' zero (as Horovod's)."""

    @staticmethod
    def forward(ctx: Any, t: torch.Tensor, root: int, name: str | None) -> torch.Tensor:
        ctx.root = root
        return co.broadcast_value(t, root, name, "broadcast")

    @staticmethod
    def backward(ctx: Any, g: torch.Tensor) -> Any:
        out = co.grouped_allreduce_values([g.contiguous()], None, Average, 1.0, 1.0,
                                          "broadcast.backward")[0]
        if co._runtime("broadcast").client.rank != ctx.root:
            out = torch.zeros_like(out)
        return out, None, None


# ---- allreduce ---------------------------------------------------------------------------

def grouped_allreduce(tensors: list[torch.Tensor], average: bool | None = None,
                      name: str | None = None, compression: Any = Compression.none,
                      op: int | None = None, prescale_factor: float = 1.0,
                      postscale_factor: float = 1.0,
                      process_set: ProcessSet = _PS) -> list[torch.Tensor]:
    """grouped_allreduce returns the reduction (op: Average by default, Sum, Min, Max, Product)
    of each tensor over every worker, in one exchange; the inputs are unchanged. A float32
    tensor declared under name (ordo.torch.declare) goes through the servers, any other
    through the scheduler (ordo.torch.collectives). compression is accepted (the scheduler
    moves tensors as they are).

    Raises:
        ValueError: Adasum, a process set other than every worker, or ranks whose tensors
            differ in shape or dtype (on every rank, naming the tensor and both shapes)
    """
    return _allreduce_list(list(tensors), average, name, op, prescale_factor,
                           postscale_factor, process_set, "grouped_allreduce")


def _allreduce_list(tensors: list[torch.Tensor], average: bool | None, name: str | None,
                    op: int | None, prescale_factor: float, postscale_factor: float,
                    process_set: ProcessSet, call: str) -> list[torch.Tensor]:
    co.check_process_set(process_set, call)
    op = co.resolve_op(average, op, call)
    return co.grouped_allreduce_values(tensors, name, op, prescale_factor, postscale_factor,
                                       call)


def grouped_allreduce_async(tensors: list[torch.Tensor], average: bool | None = None,
                            name: str | None = None, op: int | None = None,
                            prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                            process_set: ProcessSet = _PS) -> Done:
    """grouped_allreduce_async is grouped_allreduce, returning a Handle for synchronize()."""
    return Done(grouped_allreduce(tensors, average, name, Compression.none, op,
                                  prescale_factor, postscale_factor, process_set))


def grouped_allreduce_(tensors: list[torch.Tensor], average: bool | None = None,
                       name: str | None = None, op: int | None = None,
                       prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                       process_set: ProcessSet = _PS) -> list[torch.Tensor]:
    """grouped_allreduce_ is grouped_allreduce written into the tensors, which it returns."""
    out = _allreduce_list(list(tensors), average, name, op, prescale_factor, postscale_factor,
                          process_set, "grouped_allreduce_")
    with torch.no_grad():
        for t, v in zip(tensors, out, strict=True):
            t.copy_(v)
    return list(tensors)


def grouped_allreduce_async_(tensors: list[torch.Tensor], average: bool | None = None,
                             name: str | None = None, op: int | None = None,
                             prescale_factor: float = 1.0, postscale_factor: float = 1.0,
                             process_set: ProcessSet = _PS) -> Done:
    """grouped_allreduce_async_ is grouped_allreduce_, returning a Handle."""
    return Done(grouped_allreduce_(tensors, average, name, op, prescale_factor,
                                   postscale_factor, process_set))


def allreduce(tensor: torch.Tensor, average: bool | None = None, name: str | None = None,
              compression: Any = Compression.none, op: int | None = None,
              prescale_factor: float = 1.0, postscale_factor: float = 1.0,
              process_set: ProcessSet = _PS) -> torch.Tensor:
    """allreduce returns tensor reduced over every worker (op: Average by default, Sum, Min,
    Max, Product); tensor is unchanged. See grouped_allreduce. With a tensor that requires
    grad (Average or Sum), the result is differentiable: its backward reduces the gradients
    the same way (every rank runs it)."""
    if _grad_wanted(tensor):
        co.check_process_set(process_set, "allreduce")
        op = co.resolve_op(average, op, "allreduce")
        if op in (Average, Sum):
            return _Allreduce.apply(tensor, name, op, prescale_factor, postscale_factor)
    return _allreduce_list([tensor], average, name, op, prescale_factor, postscale_factor,
                           process_set, "allreduce")[0]


def allreduce_async(tensor: torch.Tensor, average: bool | None = None, name: str | None = None,
                    op: int | None = None, prescale_factor: float = 1.0,
                    postscale_factor: float = 1.0, process_set: ProcessSet = _PS) -> Done:
    """allreduce_async is allreduce, returning a Handle for synchronize()."""
    return Done(allreduce(tensor, average, name, Compression.none, op, prescale_factor,
                          postscale_factor, process_set))


def allreduce_(tensor: torch.Tensor, average: bool | None = None, name: str | None = None,
               op: int | None = None, prescale_factor: float = 1.0,
               postscale_factor: float = 1.0, process_set: ProcessSet = _PS) -> torch.Tensor:
    """allreduce_ is allreduce written into tensor, which it returns."""
    out = _allreduce_list([tensor], average, name, op, prescale_factor, postscale_factor,
                          process_set, "allreduce_")[0]
    with torch.no_grad():
        tensor.copy_(out)
    return tensor


def allreduce_async_(tensor: torch.Tensor, average: bool | None = None, name: str | None = None,
                     op: int | None = None, prescale_factor: float = 1.0,
                     postscale_factor: float = 1.0, process_set: ProcessSet = _PS) -> Done:
    """allreduce_async_ is allreduce_, returning a Handle."""
    return Done(allreduce_(tensor, average, name, op, prescale_factor, postscale_factor,
                           process_set))


def sparse_allreduce_async(tensor: torch.Tensor, name: str | None, op: int,
                           process_set: ProcessSet = _PS) -> Done:
    """sparse_allreduce_async reduces a sparse COO tensor (Average or Sum) by gathering every
    rank's indices and values, as Horovod does; synchronize() returns the sparse result."""
    co.check_process_set(process_set, "sparse_allreduce_async")
    op = co.resolve_op(None, op, "sparse_allreduce_async")
    if op not in (Average, Sum):
        raise ValueError("ordo.torch.sparse_allreduce_async: op must be Average or Sum")
    t = tensor.coalesce()
    values = t.values() / co._runtime("sparse_allreduce_async").client.size \
        if op == Average else t.values()
    idx, val = co.grouped_allgather_values([t.indices().t().contiguous(), values], name,
                                           "sparse_allreduce_async")
    return Done(torch.sparse_coo_tensor(idx.t(), val, t.shape).coalesce())


# ---- allgather, broadcast, alltoall, reducescatter ---------------------------------------

def grouped_allgather(tensors: list[torch.Tensor], name: str | None = None,
                      process_set: ProcessSet = _PS) -> list[torch.Tensor]:
    """grouped_allgather concatenates each tensor of every worker along the first dimension
    (which may differ between workers), in rank order."""
    co.check_process_set(process_set, "grouped_allgather")
    return co.grouped_allgather_values(list(tensors), name, "grouped_allgather")


def grouped_allgather_async(tensors: list[torch.Tensor], name: str | None = None,
                            process_set: ProcessSet = _PS) -> Done:
    """grouped_allgather_async is grouped_allgather, returning a Handle."""
    return Done(grouped_allgather(tensors, name, process_set))


def allgather(tensor: torch.Tensor, name: str | None = None,
              process_set: ProcessSet = _PS) -> torch.Tensor:
    """allgather concatenates every worker's tensor along the first dimension, in rank order;
    the other dimensions and the dtype must match (an error on every rank otherwise).
    Differentiable for a tensor that requires grad."""
    co.check_process_set(process_set, "allgather")
    if _grad_wanted(tensor):
        return _Allgather.apply(tensor, name)
    return co.grouped_allgather_values([tensor], name, "allgather")[0]


def allgather_async(tensor: torch.Tensor, name: str | None = None,
                    process_set: ProcessSet = _PS) -> Done:
    """allgather_async is allgather, returning a Handle."""
    return Done(allgather(tensor, name, process_set))


def broadcast(tensor: torch.Tensor, root_rank: int, name: str | None = None,
              process_set: ProcessSet = _PS) -> torch.Tensor:
    """broadcast returns root_rank's tensor on every worker (through the scheduler); the
    shapes and dtypes must match. Differentiable for a tensor that requires grad."""
    co.check_process_set(process_set, "broadcast")
    if _grad_wanted(tensor):
        return _Broadcast.apply(tensor, root_rank, name)
    return co.broadcast_value(tensor, root_rank, name, "broadcast")


def broadcast_async(tensor: torch.Tensor, root_rank: int, name: str | None = None,
                    process_set: ProcessSet = _PS) -> Done:
    """broadcast_async is broadcast, returning a Handle."""
    return Done(broadcast(tensor, root_rank, name, process_set))


def broadcast_(tensor: torch.Tensor, root_rank: int, name: str | None = None,
               process_set: ProcessSet = _PS) -> torch.Tensor:
    """broadcast_ writes root_rank's tensor into tensor, which it returns."""
    got = broadcast(tensor, root_rank, name, process_set)
    with torch.no_grad():
        tensor.copy_(got)
    return tensor


def broadcast_async_(tensor: torch.Tensor, root_rank: int, name: str | None = None,
                     process_set: ProcessSet = _PS) -> Done:
    """broadcast_async_ is broadcast_, returning a Handle."""
    return Done(broadcast_(tensor, root_rank, name, process_set))


def alltoall(tensor: torch.Tensor, splits: Any = None, name: str | None = None,
             process_set: ProcessSet = _PS) -> Any:
    """alltoall sends splits[j] rows of tensor (equal parts without splits) to rank j and
    returns the rows received, in rank order; with splits, also the counts received from each
    rank (an int32 tensor)."""
    co.check_process_set(process_set, "alltoall")
    out, received = co.alltoall_values(tensor, splits, name, "alltoall")
    return out if splits is None else (out, received)


def alltoall_async(tensor: torch.Tensor, splits: Any = None, name: str | None = None,
                   process_set: ProcessSet = _PS) -> Done:
    """alltoall_async is alltoall; synchronize() returns (output, received splits), as
    Horovod's does."""
    co.check_process_set(process_set, "alltoall_async")
    return Done(co.alltoall_values(tensor, splits, name, "alltoall_async"))


def grouped_reducescatter(tensors: list[torch.Tensor], name: str | None = None,
                          compression: Any = Compression.none, op: int = Average,
                          process_set: ProcessSet = _PS, prescale_factor: float = 1.0,
                          postscale_factor: float = 1.0) -> list[torch.Tensor]:
    """grouped_reducescatter reduces each tensor over every worker (Average or Sum) and returns
    this rank's rows of it: the first dimension split as Horovod does (the first rows % size
    ranks get one more)."""
    co.check_process_set(process_set, "grouped_reducescatter")
    op = co.resolve_op(None, op, "grouped_reducescatter")
    return co.grouped_reducescatter_values(list(tensors), name, op, prescale_factor,
                                           postscale_factor, "grouped_reducescatter")


def grouped_reducescatter_async(tensors: list[torch.Tensor], name: str | None = None,
                                op: int = Average, process_set: ProcessSet = _PS,
                                prescale_factor: float = 1.0,
                                postscale_factor: float = 1.0) -> Done:
    """grouped_reducescatter_async is grouped_reducescatter, returning a Handle."""
    return Done(grouped_reducescatter(tensors, name, Compression.none, op, process_set,
                                      prescale_factor, postscale_factor))


def reducescatter(tensor: torch.Tensor, name: str | None = None,
                  compression: Any = Compression.none, op: int = Average,
                  process_set: ProcessSet = _PS, prescale_factor: float = 1.0,
                  postscale_factor: float = 1.0) -> torch.Tensor:
    """reducescatter is grouped_reducescatter of one tensor."""
    return grouped_reducescatter([tensor], name, compression, op, process_set,
                                 prescale_factor, postscale_factor)[0]


def reducescatter_async(tensor: torch.Tensor, name: str | None = None, op: int = Average,
                        process_set: ProcessSet = _PS, prescale_factor: float = 1.0,
                        postscale_factor: float = 1.0) -> Done:
    """reducescatter_async is reducescatter, returning a Handle."""
    return Done(reducescatter(tensor, name, Compression.none, op, process_set, prescale_factor,
                              postscale_factor))


def allgather_object(obj: Any, name: str | None = None) -> list[Any]:
    """allgather_object returns every worker's obj (anything torch.save takes), in rank
    order."""
    return co.allgather_object(obj, name)


def barrier(process_set: ProcessSet = _PS) -> None:
    """barrier returns once every worker called it."""
    co.check_process_set(process_set, "barrier")
    co.barrier()


# ---- join --------------------------------------------------------------------------------

def join(device: int = -1) -> int:
    """join tells that this rank ran out of data: until every rank has joined, it takes part
    in the other ranks' DistributedOptimizer steps with zero gradients (the mean is over every
    worker, as with Horovod), without updating its own model. Flat gradients mode (the
    DistributedOptimizer's join flag); with no such optimizer it only waits for the others.
    In server mode or host groups it raises RuntimeError (the others' steps would wait for
    this rank's pushes).

    Args:
        device: ignored (Horovod's device for the zero tensors)

    Returns:
        The rank that joined last (the highest of those that joined at the same step).
    """
    r = co._runtime("join")
    r.join()
    opts = list(r.optimizers)
    if any(o._ordo_join_flag is None for o in opts):
        # the other ranks' steps would wait for this rank's pushes: a hang, not a join
        raise RuntimeError("ordo.torch.join: uneven inputs need the DistributedOptimizer in "
                           "gradients mode without host groups (its join flag); in server "
                           "mode or host groups give every rank the same number of batches "
                           "(ordo.torch.ElasticSampler, or drop_last)")
    zero_steps = 0
    if opts:
        while True:
            joined = [o.join_step() for o in opts]
            zero_steps += 1
            if joined[0] >= r.live()[1]:
                break
    steps = co.allgather_object(zero_steps, "ordo.torch.join")
    least = min(steps)
    return max(i for i, s in enumerate(steps) if s == least)


# ---- the cluster's shape and the library -------------------------------------------------

def cross_size() -> int:
    """cross_size is the number of hosts: size() over the workers per host (local_size())."""
    from ordo.torch import local_size, size
    return -(-size() // max(local_size(), 1))


def cross_rank() -> int:
    """cross_rank is this worker's host among them: its rank over local_size() (ordo-launch
    gives each host a run of ranks, which host groups follow)."""
    from ordo.torch import local_size, rank
    return rank() // max(local_size(), 1)


def is_homogeneous() -> bool:
    """is_homogeneous tells whether every host runs as many workers (size() a multiple of
    local_size())."""
    from ordo.torch import local_size, size
    return size() % max(local_size(), 1) == 0


def mpi_threads_supported() -> bool:
    """mpi_threads_supported: False, ordo does not use MPI."""
    return False


def mpi_enabled() -> bool:
    """mpi_enabled: False, ordo does not use MPI."""
    return False


def mpi_built() -> bool:
    """mpi_built: False, ordo is not built with MPI."""
    return False


def gloo_enabled() -> bool:
    """gloo_enabled: False, ordo's transport is ZeroMQ."""
    return False


def gloo_built() -> bool:
    """gloo_built: False, ordo's transport is ZeroMQ."""
    return False


def nccl_built() -> bool:
    """nccl_built: whether libordo's NCCL plugin (libordo_nccl.so, used within a host group)
    is beside the loaded libordo."""
    from ordo import _capi
    lib = _capi._Lazy._lib
    path = getattr(lib, "_name", None) if lib is not None else None
    if not path:
        return False
    folder = os.path.dirname(os.path.realpath(path))
    return os.path.exists(os.path.join(folder, "libordo_nccl.so"))


def ddl_built() -> bool:
    """ddl_built: False (IBM DDL is Horovod's)."""
    return False


def ccl_built() -> bool:
    """ccl_built: False (oneCCL is Horovod's)."""
    return False


def cuda_built() -> bool:
    """cuda_built: whether CUDA tensors can be trained here: ordo.torch moves them through
    host memory, so True where PyTorch has CUDA."""
    return torch.cuda.is_available()


def rocm_built() -> bool:
    """rocm_built: False, ordo has no ROCm path."""
    return False


# ---- process sets ------------------------------------------------------------------------

def add_process_set(process_set: ProcessSet | list[int]) -> ProcessSet:
    """add_process_set returns the set of every worker when asked for it; any other subset is
    refused, since ordo's collectives run over every worker.

    Raises:
        ValueError: a subset of the workers
    """
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    co.check_process_set(ps, "add_process_set")
    return ps


def remove_process_set(process_set: ProcessSet) -> bool:
    """remove_process_set: nothing to remove (only the set of every worker exists); returns
    False, as Horovod does for a set it does not know, and for the global one."""
    return False


# ---- timelines ---------------------------------------------------------------------------

_timeline: str | None = None


def start_timeline(file_path: str, mark_cycles: bool = False) -> None:
    """start_timeline asks for ordo's Chrome trace of this worker ([output] trace): before the
    join it turns the trace on; at shutdown() the trace (trace-worker-RANK.json in the run
    folder) is copied to file_path (rank 0) or file_path.RANK (the others).

    Raises:
        RuntimeError: after the join with [output] trace off (set --output.trace=true)
    """
    global _timeline
    r = co._runtime_any("start_timeline")
    if not r.joined:
        r.client.set("output.trace", True)
    elif str(r.settings.get("output.trace", "")).lower() != "true" and \
            (co.rt.launcher_value("output", "trace", r.conf) or "false").lower() != "true":
        raise RuntimeError("ordo.torch.start_timeline: the cluster is joined and [output] "
                           "trace is off; call start_timeline before the first transfer, or "
                           "launch with --output.trace=true")
    _timeline = file_path


def stop_timeline() -> None:
    """stop_timeline does nothing: ordo's trace covers the worker's whole run and is written
    when it leaves (shutdown), then copied to start_timeline's path."""


def copy_timeline(run_dir: str, rank: int) -> None:
    """copy_timeline copies this worker's trace to start_timeline's path (at shutdown)."""
    if _timeline is None or not run_dir:
        return
    src = os.path.join(run_dir, f"trace-worker-{rank}.json")
    if os.path.exists(src):
        shutil.copyfile(src, _timeline if rank == 0 else f"{_timeline}.{rank}")


# ---- BytePS's names beyond Horovod's -----------------------------------------------------

def byteps_push_pull(tensor: torch.Tensor, average: bool = True, name: str | None = None,
                     version: int = 0, priority: int = 0) -> Any:
    """byteps_push_pull is BytePS's in-place push_pull_async: tensor averaged (or summed)
    across the workers under name, returning a handle for synchronize().

    Raises:
        ValueError: no name (ordo declares each tensor by name, the same on every worker)
    """
    from ordo.torch import push_pull_async
    if name is None:
        raise ValueError("ordo.torch.byteps_push_pull: pass name=: ordo declares each tensor "
                         "by its name, the same on every worker")
    return push_pull_async(tensor, name, average, priority or None)


def suspend() -> None:
    """suspend: BytePS stops a job to resize it; ordo does not stop the others, so it is
    refused.

    Raises:
        RuntimeError: always, naming what to use
    """
    raise RuntimeError("ordo.torch.suspend: ordo resizes a running job without stopping it: "
                       "add a worker with ordo-launch --add-worker ([fault] max_workers) and "
                       "keep the state in ordo.torch.elastic.TorchState")


def resume(num_workers: int = 0, num_servers: int = 0, global_rank: int = -1,
           context: Any = None) -> None:
    """resume: see suspend (refused).

    Raises:
        RuntimeError: always, naming what to use
    """
    raise RuntimeError("ordo.torch.resume: ordo resizes a running job without stopping it: "
                       "add a worker with ordo-launch --add-worker ([fault] max_workers)")
