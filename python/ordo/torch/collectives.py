"""collectives: Horovod's collectives (allreduce, allgather, broadcast, alltoall, reducescatter,
their async, in-place and grouped forms, allgather_object, barrier, join) over an ordo cluster.

An ordo cluster's tensors are fixed at the join, while a Horovod script reduces tensors it
makes on the fly (a metric, a flag). So a collective on a tensor that was declared under its
name (ordo.torch.declare, push_pull) and that the servers average goes through the servers as
a push-pull; every other goes through the scheduler: each rank's tensors travel to every rank
(Client.broadcast_bytes, one broadcast per rank), each rank checks that the ranks called the
same collective on tensors of matching shapes and dtypes, and computes the result in rank
order, so every rank gets the same bits. A mismatch is an error on every rank (the same check
on the same records), naming the tensor, the ranks and both shapes. The scheduler path suits
small tensors (metrics, indices, statistics); gradients go through DistributedOptimizer.

The async forms run at the call and return a completed Handle: the collective's order is the
call order on every rank, as with Horovod.
"""
from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from ordo.torch import runtime as rt

# Horovod's reduce ops (horovod.torch.Average ...).
Average, Sum, Adasum, Min, Max, Product = 0, 1, 2, 3, 4, 5
OP_NAMES = {Average: "Average", Sum: "Sum", Adasum: "Adasum", Min: "Min", Max: "Max",
            Product: "Product"}


class HorovodInternalError(RuntimeError):
    """HorovodInternalError is Horovod's error for a failed collective; ordo raises it where a
    Horovod script catches it (elastic training), with the cluster's error as its cause."""


class HostsUpdatedInterrupt(RuntimeError):
    """HostsUpdatedInterrupt is Horovod's elastic interrupt; ordo never raises it (the live
    workers do not stop when one joins or dies: ordo.torch.elastic)."""


class ProcessSet:
    """ProcessSet names a set of ranks (Horovod's process sets). ordo's collectives run over
    every worker, so only the set of all workers (global_process_set) can be served."""

    def __init__(self, ranks: Sequence[int] | None = None):
        self.ranks = None if ranks is None else sorted(int(r) for r in ranks)
        self.process_set_id = 0

    def _all(self) -> bool:
        if self.ranks is None:
            return True
        from ordo.torch import is_initialized, size
        return is_initialized() and self.ranks == list(range(size()))

    def size(self) -> int:
        """size is the number of ranks in the set."""
        from ordo.torch import size
        return size() if self.ranks is None else len(self.ranks)

    def rank(self) -> int:
        """rank is this worker's rank within the set."""
        from ordo.torch import rank
        return rank() if self.ranks is None else self.ranks.index(rank())

    def included(self) -> bool:
        """included tells whether this worker is in the set."""
        from ordo.torch import rank
        return self.ranks is None or rank() in self.ranks

    def __repr__(self) -> str:
        return f"ProcessSet(ranks={self.ranks if self.ranks is not None else 'all'})"


global_process_set = ProcessSet()


def check_process_set(process_set: Any, call: str) -> None:
    """check_process_set raises ValueError unless process_set is every worker."""
    if process_set is None or process_set is global_process_set:
        return
    if isinstance(process_set, ProcessSet) and process_set._all():
        return
    raise ValueError(f"ordo.torch.{call}: process_set={process_set!r}: ordo's collectives run "
                     "over every worker; a subset cannot be formed (pass "
                     "process_set=global_process_set, or run one job per subset)")


def resolve_op(average: bool | None, op: int | None, call: str) -> int:
    """resolve_op is Horovod's choice between the old average= and op= (Average default)."""
    if average is not None and op is not None:
        raise ValueError(f"ordo.torch.{call}: pass op= or average=, not both")
    if op is None:
        op = Sum if average is False else Average
    if op == Adasum:
        raise ValueError(f"ordo.torch.{call}: op=Adasum combines gradients pairwise along "
                         "an allreduce tree, which a parameter server does not have; use "
                         "op=Average (or Sum)")
    if op not in OP_NAMES:
        raise ValueError(f"ordo.torch.{call}: op={op!r}; one of Average, Sum, Min, Max, "
                         "Product")
    return op


@dataclass
class Done:
    """Done is the handle of an async collective: it ran at the call; synchronize returns
    value."""
    value: Any
    done: bool = True


# ---- the scheduler path ----------------------------------------------------------------------

def _runtime_any(call: str) -> rt.Runtime:
    """_runtime_any is the process's runtime (RuntimeError before init())."""
    import ordo.torch as ot
    r = ot._runtime
    if r is None:
        raise RuntimeError(f"ordo.torch.{call}: call ordo.torch.init() first")
    return r


def _runtime(call: str) -> rt.Runtime:
    """_runtime is the runtime of a collective: joined, or with tensors to join with."""
    r = _runtime_any(call)
    if not r.joined and not r.tensors:
        raise RuntimeError(f"ordo.torch.{call}: a collective joins the cluster, and no tensor "
                           "is declared yet (the cluster's tensors are fixed at the join): make "
                           "the DistributedOptimizer (or ordo.torch.declare your tensors) "
                           "before the first collective")
    return r


def _gather(call: str, record: dict) -> list[dict]:
    """_gather sends this rank's record to every rank and returns every rank's, in rank order;
    record holds the call, the name, and the tensors' shapes, dtypes and values."""
    r = _runtime(call)
    r.join()
    out = io.BytesIO()
    torch.save(record, out)
    mine = out.getvalue()
    records = []
    for root in range(r.client.size):
        data = r.broadcast_bytes(mine if root == r.client.rank else None, root)
        records.append(torch.load(io.BytesIO(data), weights_only=False))
    # every rank compares the same records against rank 0's: the same error on every rank
    first = records[0]
    for i, rec in enumerate(records[1:], start=1):
        if rec["call"] != first["call"] or (first["name"] and rec["name"]
                                             and rec["name"] != first["name"]):
            raise ValueError(f"ordo.torch: rank 0 called {first['call']} "
                             f"{first['name']!r} where rank {i} called {rec['call']} "
                             f"{rec['name']!r}: every rank must make the same collectives in "
                             "the same order")
        if len(rec["shapes"]) != len(first["shapes"]):
            raise ValueError(f"ordo.torch.{call} {first['name']!r}: {len(first['shapes'])} "
                             f"tensors on rank 0, {len(rec['shapes'])} on rank {i}")
    return records


def _record(call: str, name: str | None, tensors: list[torch.Tensor] | None,
            shapes: list[torch.Tensor] | None = None, **extra: Any) -> dict:
    src = tensors if tensors is not None else shapes or []
    rec = {"call": call, "name": name or "", "shapes": [list(t.shape) for t in src],
           "dtypes": [str(t.dtype) for t in src],
           "values": None if tensors is None else [t.detach().cpu().contiguous()
                                                   for t in tensors]}
    rec.update(extra)
    return rec


def _tensor_name(name: str | None, i: int, n: int) -> str:
    base = repr(name) if name else "(unnamed)"
    return base if n == 1 else f"{base}[{i}]"


def _check_same(call: str, name: str | None, records: list[dict], first_dim: bool) -> None:
    """_check_same raises on every rank when the ranks' tensors differ in dtype or shape
    (first_dim False: in all but the first dimension)."""
    n = len(records[0]["shapes"])
    for i in range(n):
        s0, d0 = records[0]["shapes"][i], records[0]["dtypes"][i]
        for r, rec in enumerate(records[1:], start=1):
            s, d = rec["shapes"][i], rec["dtypes"][i]
            what = _tensor_name(name, i, n)
            if d != d0:
                raise ValueError(f"ordo.torch.{call}: tensor {what} has dtype {d0} on rank 0 "
                                 f"and {d} on rank {r}")
            same = s == s0 if first_dim else (len(s) == len(s0) and s[1:] == s0[1:]
                                              and len(s) > 0)
            if not same:
                rule = "the same shape" if first_dim else \
                    "the same shape but for the first dimension"
                raise ValueError(f"ordo.torch.{call}: tensor {what} has shape {s0} on rank 0 "
                                 f"and {s} on rank {r}; every rank needs {rule}")


def _reduce(values: list[torch.Tensor], op: int) -> torch.Tensor:
    stacked = torch.stack(values)
    if op in (Average, Sum):
        out = stacked.sum(0)
        if op == Average:
            if out.is_floating_point() or out.is_complex():
                out = out / len(values)
            else:
                out = torch.div(out, len(values), rounding_mode="floor")
        return out
    if op == Min:
        return stacked.amin(0)
    if op == Max:
        return stacked.amax(0)
    return stacked.prod(0)


def _scale(t: torch.Tensor, factor: float) -> torch.Tensor:
    return t if factor == 1.0 else t * factor


def _through_servers(r: rt.Runtime, t: torch.Tensor, name: str | None, op: int) -> bool:
    """_through_servers: the tensor was declared under name for the servers to average."""
    if name is None or op not in (Average, Sum) or r.in_groups():
        return False
    d = r.tensors.get(name)
    return (d is not None and d.kind == rt.AVERAGE and d.numel == t.numel()
            and t.dtype == torch.float32)


def grouped_allreduce_values(tensors: list[torch.Tensor], name: str | None, op: int,
                             prescale_factor: float, postscale_factor: float,
                             call: str) -> list[torch.Tensor]:
    """grouped_allreduce_values returns the reduction of each tensor over the ranks (new
    tensors, on each input's device)."""
    r = _runtime(call)
    if len(tensors) == 1 and _through_servers(r, tensors[0], name, op):
        t = _scale(tensors[0].detach(), prescale_factor).contiguous().clone()
        r.synchronize(r.push_pull_async(t, name, op == Average, None))
        return [_scale(t, postscale_factor).to(tensors[0].device)]
    pre = [_scale(t.detach(), prescale_factor) for t in tensors]
    records = _gather(call, _record(call, name, pre, op=op))
    _check_same(call, name, records, first_dim=True)
    ops = {rec["op"] for rec in records}
    if len(ops) > 1:
        raise ValueError(f"ordo.torch.{call} {name!r}: the ranks ask for different ops "
                         f"({', '.join(OP_NAMES[o] for o in sorted(ops))})")
    out = []
    for i, t in enumerate(tensors):
        red = _reduce([rec["values"][i] for rec in records], op)
        out.append(_scale(red, postscale_factor).to(t.device))
    return out


def grouped_allgather_values(tensors: list[torch.Tensor], name: str | None,
                             call: str) -> list[torch.Tensor]:
    """grouped_allgather_values concatenates each tensor of every rank along dim 0, in rank
    order (first dimensions may differ)."""
    records = _gather(call, _record(call, name, [t.detach() for t in tensors]))
    _check_same(call, name, records, first_dim=False)
    return [torch.cat([rec["values"][i] for rec in records]).to(t.device)
            for i, t in enumerate(tensors)]


def broadcast_value(tensor: torch.Tensor, root_rank: int, name: str | None,
                    call: str) -> torch.Tensor:
    """broadcast_value returns root_rank's tensor (shapes and dtypes checked on every rank)."""
    r = _runtime(call)
    r.join()
    if not 0 <= root_rank < r.client.size:
        raise ValueError(f"ordo.torch.{call}: root_rank={root_rank}; the workers are 0 .. "
                         f"{r.client.size - 1}")
    mine = r.client.rank == root_rank
    records = _gather(call, _record(call, name, [tensor.detach()] if mine else None,
                                    shapes=[tensor], root=root_rank))
    roots = {rec["root"] for rec in records}
    if len(roots) > 1:
        raise ValueError(f"ordo.torch.{call} {name!r}: the ranks name different roots "
                         f"{sorted(roots)}")
    _check_same(call, name, records, first_dim=True)
    return records[root_rank]["values"][0].to(tensor.device)


def _splits_list(splits: Any, n: int, rows: int, call: str) -> list[int]:
    if splits is None:
        if rows % n:
            raise ValueError(f"ordo.torch.{call}: {rows} rows do not split equally over {n} "
                             "workers; pass splits=")
        return [rows // n] * n
    s = [int(x) for x in (splits.tolist() if isinstance(splits, torch.Tensor) else splits)]
    if len(s) != n or any(x < 0 for x in s) or sum(s) != rows:
        raise ValueError(f"ordo.torch.{call}: splits={s}: {n} counts >= 0 that add up to the "
                         f"tensor's first dimension ({rows})")
    return s


def alltoall_values(tensor: torch.Tensor, splits: Any, name: str | None,
                    call: str) -> tuple[torch.Tensor, torch.Tensor]:
    """alltoall_values sends splits[j] rows of tensor to rank j and returns the rows received,
    in rank order, with the counts received from each rank."""
    r = _runtime(call)
    r.join()
    n = r.client.size
    s = _splits_list(splits, n, tensor.shape[0] if tensor.dim() else 0, call)
    records = _gather(call, _record(call, name, [tensor.detach()], splits=s))
    _check_same(call, name, records, first_dim=False)
    me = r.client.rank
    parts, counts = [], []
    for rec in records:
        start = sum(rec["splits"][:me])
        parts.append(rec["values"][0][start:start + rec["splits"][me]])
        counts.append(rec["splits"][me])
    return torch.cat(parts).to(tensor.device), torch.tensor(counts, dtype=torch.int32)


def reducescatter_rows(rows: int, n: int) -> list[int]:
    """reducescatter_rows is Horovod's split of rows over n ranks: the first rows % n ranks
    get one more."""
    return [rows // n + (1 if i < rows % n else 0) for i in range(n)]


def grouped_reducescatter_values(tensors: list[torch.Tensor], name: str | None, op: int,
                                 prescale_factor: float, postscale_factor: float,
                                 call: str) -> list[torch.Tensor]:
    """grouped_reducescatter_values reduces each tensor over the ranks and returns this rank's
    part of its first dimension."""
    if op not in (Average, Sum):
        raise ValueError(f"ordo.torch.{call}: op={OP_NAMES.get(op, op)}; reducescatter takes "
                         "Average or Sum")
    for t in tensors:
        if t.dim() == 0:
            raise ValueError(f"ordo.torch.{call}: a 0-dimensional tensor cannot be scattered")
    full = grouped_allreduce_values(tensors, name, op, prescale_factor, postscale_factor, call)
    r = _runtime(call)
    me, n = r.client.rank, r.client.size
    out = []
    for t in full:
        rows = reducescatter_rows(t.shape[0], n)
        start = sum(rows[:me])
        out.append(t[start:start + rows[me]].clone())
    return out


def allgather_object(obj: Any, name: str | None = None) -> list[Any]:
    """allgather_object returns the list of every rank's obj (anything torch.save takes), in
    rank order."""
    out = io.BytesIO()
    torch.save(obj, out)
    records = _gather("allgather_object", {"call": "allgather_object", "name": name or "",
                                           "shapes": [], "blob": out.getvalue()})
    return [torch.load(io.BytesIO(rec["blob"]), weights_only=False) for rec in records]


def barrier() -> None:
    """barrier returns once every worker called it."""
    r = _runtime("barrier")
    r.join()
    r.client.barrier()
