"""runtime: this process's membership in an ordo cluster as a PyTorch worker.

One Runtime per process (ordo.torch's module functions use it): init() makes an ordo.Client
from the launcher's conf, tensors are declared (by DistributedOptimizer, declare() or the first
push_pull), and the cluster is joined lazily, the first time a transfer needs it, because an
ordo cluster's tensors are fixed when the workers join while a Horovod-style script calls
init() before its model exists. rank() and size() answer before the join from what the
launcher set ([cluster] rank and workers). Transfers move float32 CPU tensors without copies.
"""
from __future__ import annotations

import configparser
import io
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

import ordo

# The update a tensor's servers run (Client.declare_update's kinds).
AVERAGE = "average"  # no parameter kept: a pull of version v is the mean of the v-th pushes
SGD = "sgd"          # server-side SGD with the tensor's own lr, momentum and weight decay
CONF = "conf"        # the conf's [optimizer] (the cluster's default)

BROADCAST_TIMEOUT_MS = 600_000
SPARSE_DENSITY = 0.01  # libordo's push.density when the conf sets none


@dataclass
class Tensor:
    """Tensor is one declared tensor: its index in the cluster, size and update."""
    index: int
    numel: int
    kind: str
    hyper: tuple[float, float, float] = (0.0, 0.0, 0.0)  # lr, momentum, weight decay (SGD)


@dataclass
class PushPull:
    """PushPull is a push_pull in flight: the transfer's handle, the tensor to write the
    result into, and the receive buffer."""
    handle: ordo.Handle
    tensor: torch.Tensor
    recv: torch.Tensor
    scale: float
    done: bool = False


def check_tensor(t: torch.Tensor, what: str, cuda: bool = True) -> None:
    """check_tensor raises TypeError or ValueError when t cannot cross: it must be float32 and
    contiguous, on the CPU (without a copy) or, with cuda, on a CUDA device (staged through
    pinned host buffers)."""
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"ordo.torch: {what} is a {type(t).__name__}, not a torch.Tensor")
    if t.dtype != torch.float32:
        raise TypeError(f"ordo.torch: {what} has dtype {t.dtype}; ordo moves float32 "
                        "(convert the model with .float())")
    if t.device.type != "cpu" and not (cuda and t.device.type == "cuda"):
        raise TypeError(f"ordo.torch: {what} is on {t.device}; ordo moves CPU and CUDA "
                        "tensors")
    if not t.is_contiguous():
        raise ValueError(f"ordo.torch: {what} is not contiguous (use .contiguous())")


def launcher_value(section: str, key: str, conf: str | None) -> str | None:
    """launcher_value reads [section] key from ORDO_SECTION_KEY or the conf file, as ordo_new
    would (the environment over the file); None when neither sets it."""
    env = os.environ.get(f"ORDO_{section.upper()}_{key.upper()}")
    if env is not None:
        return env
    if conf:
        parser = configparser.ConfigParser(inline_comment_prefixes=(";", "#"), strict=False)
        try:
            parser.read(conf)
            if parser.has_option(section, key):
                return parser.get(section, key).strip()
        except configparser.Error:
            return None  # ordo_new has the conf's errors to say
    return None


def _launcher_int(key: str, conf: str | None) -> int | None:
    """_launcher_int reads [cluster] key as an integer (launcher_value)."""
    v = launcher_value("cluster", key, conf)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None  # ordo_new has the conf's errors to say


@dataclass
class Runtime:
    """Runtime is the process's client and what was declared on it."""
    client: ordo.Client
    conf: str | None
    settings: dict[str, Any]
    tensors: dict[str, Tensor] = field(default_factory=dict)
    joined: bool = False
    on_join: list[Callable[[], None]] = field(default_factory=list)
    optimizers: list[Any] = field(default_factory=list)  # DistributedOptimizers (join())

    def in_groups(self) -> bool:
        """in_groups tells whether the conf puts this worker in a host group: [cluster]
        local_size above 1 (0: the launcher's ORDO_LOCAL_SIZE) and an [intra] backend other
        than none. DistributedOptimizer then trains through the bound model (ordo.torch.groups),
        which runs on any path, so a conf the scheduler does not group still trains."""
        backend = self.settings.get("intra.backend") or launcher_value("intra", "backend",
                                                                     self.conf)
        if str(backend or "none").strip() == "none":
            return False
        size = self.settings.get("cluster.local_size")
        if size is None:
            size = _launcher_int("local_size", self.conf)
        size = int(size or 0) or int(os.environ.get("ORDO_LOCAL_SIZE", "1"))
        return size > 1

    def sparse(self) -> bool:
        """sparse tells whether the conf's [push] mode is sparse (Ok-Topk's path,
        Compression.oktopk): the library then pushes the whole model's top-k once per
        iteration, so DistributedOptimizer trains through the bound model as in groups."""
        mode = self.settings.get("push.mode") or launcher_value("push", "mode", self.conf)
        return str(mode or "dense").strip() == "sparse"

    def density(self) -> float | None:
        """density is the conf's [push] density (None: not set, libordo's default)."""
        d = self.settings.get("push.density") or launcher_value("push", "density", self.conf)
        try:
            return float(d) if d is not None else None
        except ValueError:
            return None  # ordo_new has the conf's errors to say

    def bound_model(self) -> bool:
        """bound_model tells whether DistributedOptimizer moves whole iterations through the
        library's bound model (ordo.torch.groups): in host groups, and on the sparse path."""
        return self.in_groups() or self.sparse()

    def refuse_in_groups(self, what: str) -> None:
        """refuse_in_groups raises RuntimeError for a key-level call in host groups."""
        if self.in_groups():
            raise RuntimeError(f"ordo.torch: {what} is not available in host groups ([cluster] "
                               "local_size > 1 with an [intra] backend): a group moves whole "
                               "iterations of the DistributedOptimizer's parameters; run "
                               "without groups ([intra] backend = none) to average tensors of "
                               "your own")

    # ---- declaring and joining -----------------------------------------------------------

    def declare(self, name: str, numel: int, kind: str = AVERAGE,
                hyper: tuple[float, float, float] = (0.0, 0.0, 0.0),
                every_step: bool = False, codec: str = "none") -> Tensor:
        """declare adds tensor name (before the join) with the update its servers run and its
        wire codec; a name declared again must have the same size and update. A tensor not
        transferred every_step (the program's own, push_pull's) travels alone under merged
        pushes."""
        old = self.tensors.get(name)
        if old is not None:
            if (old.numel, old.kind, old.hyper) != (numel, kind, hyper):
                raise ValueError(f"ordo.torch: tensor {name!r} declared twice, as {old.numel} "
                                 f"values ({old.kind}) and {numel} ({kind})")
            return old
        if self.joined:
            raise RuntimeError(f"ordo.torch: tensor {name!r} declared after the cluster was "
                               "joined; declare every tensor (DistributedOptimizer, "
                               "ordo.torch.declare) before the first transfer")
        index = self.client.declare(name, numel)
        lr, momentum, wd = hyper
        self.client.declare_update(index, kind, lr, momentum, wd)
        if not every_step:
            self.client.declare_occasional(index)
        if codec != "none":
            self.client.declare_compression(index, codec)
        t = Tensor(index, numel, kind, hyper)
        self.tensors[name] = t
        return t

    def join(self) -> None:
        """join joins the cluster with the tensors declared so far (once), then runs what
        waited for it, the on_join callbacks in order (broadcasts asked for before the tensors
        were known, server mode's initial values)."""
        if self.joined:
            return
        if not self.tensors:
            raise RuntimeError("ordo.torch: no tensors declared; make the DistributedOptimizer "
                               "(or call ordo.torch.declare) before the first transfer")
        self.client.join()
        self.joined = True
        waiting, self.on_join = self.on_join, []
        for fn in waiting:
            fn()

    def when_joined(self, fn: Callable[[], None]) -> None:
        """when_joined runs fn now when the cluster is joined or tensors are declared (joining
        it), else at the join: a broadcast asked for before the model's tensors are known."""
        if self.joined or self.tensors:
            self.join()
            fn()
        else:
            self.on_join.append(fn)

    def rank(self) -> int:
        """rank is this worker's rank: the cluster's after the join, before it the one the
        launcher assigned ([cluster] rank)."""
        if self.joined:
            return self.client.rank
        r = _launcher_int("rank", self.conf)
        if r is None or r < 0:
            r = self.settings.get("cluster.rank")
        if r is None or int(r) < 0:
            raise RuntimeError("ordo.torch.rank(): the launcher assigned no rank ([cluster] "
                               "rank) and the cluster is not joined yet (it is joined by the "
                               "first transfer); start workers with scripts/ordo-launch")
        return int(r)

    def size(self) -> int:
        """size is the number of workers ([cluster] workers before the join)."""
        if self.joined:
            return self.client.size
        n = self.settings.get("cluster.workers") or _launcher_int("workers", self.conf)
        return int(n) if n is not None else 1

    def live(self) -> tuple[int, int]:
        """live is this worker's index among the workers still in the run and their number:
        (rank, size) until a worker left ([fault] worker = shrink, the scheduler's MEMBERS)."""
        if self.joined:
            left, index, n, _ = self.client.members()
            if left:
                return index, n
        return self.rank(), self.size()

    # ---- transfers ------------------------------------------------------------------------

    def push_pull_async(self, tensor: torch.Tensor, name: str, average: bool,
                        priority: int | None) -> PushPull:
        """push_pull_async pushes tensor as name's next value and pulls the workers' mean (sum
        without average) into a receive buffer; synchronize() writes it back into tensor."""
        check_tensor(tensor, f"push_pull tensor {name!r}")
        self.refuse_in_groups("push_pull")
        t = self.tensors.get(name)
        if t is None:
            t = self.declare(name, tensor.numel())
        if t.kind != AVERAGE:
            raise ValueError(f"ordo.torch: tensor {name!r} is updated by the servers "
                             "(mode='server'); push_pull averages tensors of its own")
        if t.numel != tensor.numel():
            raise ValueError(f"ordo.torch: push_pull {name!r}: {tensor.numel()} values, "
                             f"declared with {t.numel}")
        self.join()
        src = tensor.cpu()  # a CUDA tensor is staged through host memory
        recv = torch.empty_like(src)
        prio = t.index if priority is None else priority
        h = self.client.pushpull(t.index, src, recv, prio)
        # the servers' mean is over the workers that pushed: the live ones after a shrink
        return PushPull(h, tensor, recv, 1.0 if average else float(self.live()[1]))

    def synchronize(self, pp: PushPull, timeout_ms: int = -1) -> torch.Tensor:
        """synchronize waits for pp and writes the result into its tensor, which it returns."""
        if not pp.done:
            pp.handle.wait(timeout_ms)
            if pp.scale != 1.0:
                pp.recv.mul_(pp.scale)
            pp.tensor.copy_(pp.recv)
            pp.done = True
        return pp.tensor

    # ---- broadcasts -----------------------------------------------------------------------

    def broadcast_bytes(self, data: bytes | None, root: int) -> bytes:
        """broadcast_bytes sends root's data to every worker (through the scheduler) and
        returns it on each."""
        self.join()
        mine = data if self.client.rank == root else None
        return self.client.broadcast_bytes(mine, root, BROADCAST_TIMEOUT_MS)

    def broadcast_state(self, state: dict, root: int) -> None:
        """broadcast_state copies root's tensors of state (a state_dict: name -> tensor, any
        dtype) into every worker's, in place (joined first)."""
        tensors = {k: v for k, v in state.items() if isinstance(v, torch.Tensor)}
        buf = None
        if self.client.rank == root:
            out = io.BytesIO()
            torch.save({k: v.detach().cpu() for k, v in tensors.items()}, out)
            buf = out.getvalue()
        got = torch.load(io.BytesIO(self.broadcast_bytes(buf, root)), weights_only=True)
        if set(got) != set(tensors):
            raise ValueError("ordo.torch: broadcast_parameters: the workers' state dicts "
                             f"differ: root has {sorted(got)[:5]}..., this worker "
                             f"{sorted(tensors)[:5]}...")
        with torch.no_grad():
            for k, v in tensors.items():
                v.copy_(got[k])

    def broadcast_object(self, obj: Any, root: int) -> Any:
        """broadcast_object returns root's obj (torch-serializable) on every worker."""
        self.join()
        buf = None
        if self.client.rank == root:
            out = io.BytesIO()
            torch.save(obj, out)
            buf = out.getvalue()
        return torch.load(io.BytesIO(self.broadcast_bytes(buf, root)), weights_only=False)
