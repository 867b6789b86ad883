"""elastic: Horovod's elastic names for ordo.torch. A worker process that dies is started
again by the launcher with its rank ([fault] worker = restart, scripts/ordo-launch, a
[worker] command included) and goes on where its predecessor stopped; a worker added to a
running job (ordo-launch --add-worker, [fault] max_workers) starts where the others are. In
server mode the parameters come from the servers; in gradients mode the parameters, the
optimizer state and the kwargs come from a live peer's last commit() (ordo_peer_state); the
step from the cluster. A push the dead process had sent already is recognised by the servers
and not applied twice. Under [fault] worker = shrink the others go on without a dead worker.

    state = ordo.torch.elastic.TorchState(model, optimizer, step=0)

    @ordo.torch.elastic.run
    def train(state):
        for step in range(state.step, STEPS):
            state.step = step
            ...
            optimizer.step()
            state.commit()

    train(state)

Unlike Horovod, the workers that stay alive do not stop and re-sync when one dies or joins:
they wait at their next pull until the new process pushes (bsp), so run() only has the new
process to sync (TorchState.sync) and calls the reset callbacks when it restarted or joined.
In gradients mode commit() after every optimizer step: a live peer gives the new process its
last commit, which must be of the iteration the cluster is at.
"""
from __future__ import annotations

import copy
import functools
import io
from collections.abc import Callable
from typing import Any

import torch

from ordo.torch import residuals
from ordo.torch.sampler import ElasticSampler  # noqa: F401 (hvd.elastic.ElasticSampler)


class TorchState:
    """TorchState(model, optimizer, **kwargs) is the state elastic training keeps: the model
    and optimizer (with this worker's error-feedback residuals, ordo.torch.residuals), and the
    kwargs as attributes (state.step, state.epoch ...). commit() keeps a copy in memory,
    restore() goes back to it. After a restart, sync() sets the kwarg
    `step` (when given) to the iteration the cluster goes on at."""

    def __init__(self, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                 **kwargs: Any):
        self.model = model
        self.optimizer = optimizer
        self._keys = list(kwargs)
        for k, v in kwargs.items():
            setattr(self, k, v)
        self._callbacks: list[Callable[[], None]] = []
        self._saved: dict[str, Any] | None = None
        self.restarted = False
        self.commit()

    def commit(self) -> None:
        """commit keeps a copy of the model's and optimizer's state and of the kwargs; in
        gradients mode, when a worker may restart or join ([fault] worker = restart, or
        max_workers above workers), the library keeps it serialized for a peer that does."""
        self._saved = {"model": copy.deepcopy(self.model.state_dict()),
                       "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                       "kwargs": {k: copy.deepcopy(getattr(self, k)) for k in self._keys}}
        rt = self._peer_runtime()
        if rt is not None:
            # a peer is another rank: it has residuals of its own (the run folder's, restarted)
            peer = dict(self._saved, optimizer=residuals.without(self._saved["optimizer"]))
            out = io.BytesIO()
            torch.save(peer, out)
            rt.client.commit_state(out.getvalue())

    def _gradients_mode(self) -> bool:
        return getattr(self.optimizer, "_ordo_mode", None) == "gradients"

    def _peer_runtime(self) -> Any:
        """_peer_runtime is the runtime when this state is what a new process takes from its
        peers (gradients mode in an elastic run, joined), else None."""
        import ordo.torch as ot
        from ordo.torch import runtime as rt_mod
        rt = ot._runtime
        if rt is None or not rt.joined or not self._gradients_mode():
            return None
        if not hasattr(self, "_elastic"):
            worker = rt_mod.launcher_value("fault", "worker", rt.conf)
            grow = rt_mod.launcher_value("fault", "max_workers", rt.conf)
            try:
                grows = int(grow or 0) > rt.size()
            except ValueError:
                grows = False
            self._elastic = worker == "restart" or grows
        return rt if self._elastic else None

    def restore(self) -> None:
        """restore goes back to the last commit, but for the error-feedback residuals: they
        stay as this worker's last pushes left them (those pushes reached the servers, and the
        library takes residuals only before the first push)."""
        assert self._saved is not None
        self.model.load_state_dict(self._saved["model"])
        self.optimizer.load_state_dict(residuals.without(self._saved["optimizer"]))
        for k, v in self._saved["kwargs"].items():
            setattr(self, k, copy.deepcopy(v))

    def register_reset_callbacks(self, callbacks: list[Callable[[], None]]) -> None:
        """register_reset_callbacks adds functions run() calls after a restart (a learning
        rate schedule to set again, a data loader to move to the step)."""
        self._callbacks.extend(callbacks)

    def sync(self) -> None:
        """sync joins the cluster (the optimizer declared the tensors); at the run's start
        every worker takes rank 0's model, optimizer state and kwargs (Horovod's sync); in a
        process that
        took a dead worker's place or joined a running job, sets `step` to the iteration the
        cluster goes on at: server mode, the servers' values arrive with the optimizer's first
        pull; gradients mode, the model, optimizer and kwargs are a live peer's last commit
        (and the step its iteration)."""
        import ordo.torch as ot
        rt = ot._rt_or_raise()
        rt.join()
        at = min((rt.client.version(t.index) for t in rt.tensors.values()), default=0)
        self.restarted = at > 0
        if not self.restarted and rt.client.resume_iter() < 0:
            self._from_root(ot)
        if self.restarted and self._gradients_mode():
            if self._peer_runtime() is None:
                raise RuntimeError("ordo.torch.elastic: a restarted gradients-mode worker needs "
                                   "its peers' state, which they keep only under [fault] worker "
                                   "= restart or max_workers above workers")
            blob, at = rt.client.peer_state(self._peer_timeout_ms(rt))
            saved = torch.load(io.BytesIO(blob), weights_only=False)
            self.model.load_state_dict(saved["model"])
            self.optimizer.load_state_dict(residuals.without(saved["optimizer"]))
            for k, v in saved["kwargs"].items():
                setattr(self, k, v)
            print(f"ordo.torch.elastic: rank {rt.rank()} took a peer's state of iteration {at} "
                  f"({len(blob)} bytes)", flush=True)
        if self.restarted and "step" in self._keys:
            self.step = at
        if self.restarted:
            self.commit()

    def _from_root(self, ot: Any) -> None:
        """_from_root gives every worker of the run's start rank 0's model, optimizer state
        and kwargs, as Horovod's first sync does (a collective of those workers)."""
        mine = {"model": self.model.state_dict(),
                "optimizer": residuals.without(self.optimizer.state_dict()),
                "kwargs": {k: getattr(self, k) for k in self._keys}}
        got = ot.broadcast_object(mine, root_rank=0)
        if ot.rank() != 0:
            self.model.load_state_dict(got["model"])
            self.optimizer.load_state_dict(got["optimizer"])
            for k, v in got["kwargs"].items():
                setattr(self, k, v)
        self.commit()

    @staticmethod
    def _peer_timeout_ms(rt: Any) -> int:
        """the wait for a peer's state: [fault] startup_ms (default 60 s)"""
        from ordo.torch import runtime as rt_mod
        v = rt_mod.launcher_value("fault", "startup_ms", rt.conf)
        try:
            return int(v) if v is not None else 60000
        except ValueError:
            return 60000

    def reset(self) -> None:
        """reset runs the reset callbacks."""
        for cb in self._callbacks:
            cb()


def run(fn: Callable[..., Any]) -> Callable[..., Any]:
    """run wraps the training function fn(state, ...): it syncs the state first (a restarted
    process goes on at the cluster's step) and runs the reset callbacks after a restart."""

    @functools.wraps(fn)
    def wrapper(state: TorchState, *args: Any, **kwargs: Any) -> Any:
        state.sync()
        if state.restarted:
            state.reset()
        return fn(state, *args, **kwargs)

    return wrapper
