"""elastic: Horovod's elastic names for ordo.torch. A worker process that dies is started
again by the launcher with its rank ([fault] worker = restart, scripts/ordo-launch, a
[worker] command included) and goes on where its predecessor stopped: in server mode the
parameters come from the servers, and the step from the scheduler (the first iteration the
dead process did not finish). A push the dead process had sent already is recognised by the
servers and not applied twice.

    state = ordo.torch.elastic.TorchState(model, optimizer, step=0)

    @ordo.torch.elastic.run
    def train(state):
        for step in range(state.step, STEPS):
            state.step = step
            ...
            optimizer.step()
            state.commit()

    train(state)

Unlike Horovod, the workers that stay alive do not stop and re-sync when one dies: they wait
at their next pull until the new process pushes (bsp), so run() only has the new process to
sync (TorchState.sync) and calls the reset callbacks when a restart took place.
"""
from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from typing import Any

import torch


class TorchState:
    """TorchState(model, optimizer, **kwargs) is the state elastic training keeps: the model
    and optimizer, and the kwargs as attributes (state.step, state.epoch ...). commit() keeps
    a copy in memory, restore() goes back to it. After a restart, sync() sets the kwarg
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
        """commit keeps a copy of the model's and optimizer's state and of the kwargs."""
        self._saved = {"model": copy.deepcopy(self.model.state_dict()),
                       "optimizer": copy.deepcopy(self.optimizer.state_dict()),
                       "kwargs": {k: copy.deepcopy(getattr(self, k)) for k in self._keys}}

    def restore(self) -> None:
        """restore goes back to the last commit."""
        assert self._saved is not None
        self.model.load_state_dict(self._saved["model"])
        self.optimizer.load_state_dict(self._saved["optimizer"])
        for k, v in self._saved["kwargs"].items():
            setattr(self, k, copy.deepcopy(v))

    def register_reset_callbacks(self, callbacks: list[Callable[[], None]]) -> None:
        """register_reset_callbacks adds functions run() calls after a restart (a learning
        rate schedule to set again, a data loader to move to the step)."""
        self._callbacks.extend(callbacks)

    def sync(self) -> None:
        """sync joins the cluster (the optimizer declared the tensors) and, in a process that
        took a dead worker's place, sets `step` to the iteration the cluster goes on at; the
        servers' values arrive with the optimizer's first pull (server mode)."""
        import ordo.torch as ot
        rt = ot._rt_or_raise()
        rt.join()
        at = min((rt.client.version(t.index) for t in rt.tensors.values()), default=0)
        self.restarted = at > 0
        if self.restarted and "step" in self._keys:
            self.step = at
            self.commit()

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
