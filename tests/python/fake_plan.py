"""fake_plan: stand-ins for ordo.torch.profile (ModelProfiler, ForwardGate) and Client.replan
with their signatures, so that test_torch checks DistributedOptimizer's model= seam (priorities
from a plan, each module's forward waiting for its own parameters) before the real ones are
there. install() puts them in place in a worker process; replan gives the reverse order."""
from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import ordo
import torch

CALLS: list[str] = []


class ModelProfiler:
    """ModelProfiler is ready after iterations + 1 step_done calls, like the real one."""

    def __init__(self, model: torch.nn.Module, named: Any, iterations: int = 5, **_: Any):
        self.names = [n for n, _ in named]
        self.iterations = iterations
        self.steps = 0

    def start(self) -> ModelProfiler:
        return self

    def step_done(self) -> None:
        self.steps += 1

    def ready(self) -> bool:
        return self.steps >= self.iterations + 1

    def to_json(self) -> str:
        return f'{{"params": {len(self.names)}}}'

    def remove(self) -> None:
        pass


class ForwardGate:
    """ForwardGate waits, before each module's forward, for its own parameters' tensors."""

    def __init__(self, model: torch.nn.Module, tensor_of_param: dict, wait_fn: Callable):
        by_id = {id(p): t for p, t in tensor_of_param.items()}
        self.handles = []
        for m in model.modules():
            mine = sorted({by_id[id(p)] for p in m.parameters(recurse=False) if id(p) in by_id})
            if mine:
                self.handles.append(m.register_forward_pre_hook(self._hook(mine, wait_fn)))

    @staticmethod
    def _hook(mine: list[int], wait_fn: Callable) -> Callable:
        def hook(module: torch.nn.Module, args: Any) -> None:
            CALLS.append(f"gate {mine}")
            wait_fn(mine)
        return hook


def replan(self: ordo.Client, profile_json: str | None, timeout_ms: int = -1) -> list[int]:
    CALLS.append(f"replan {profile_json is not None}")
    self.barrier(timeout_ms)
    n = len(self.tensors())
    return [n - 1 - i for i in range(n)]


def install() -> None:
    """install makes ordo.torch.profile and Client.replan the stand-ins."""
    mod = types.ModuleType("ordo.torch.profile")
    mod.ModelProfiler = ModelProfiler
    mod.ForwardGate = ForwardGate
    sys.modules["ordo.torch.profile"] = mod
    ordo.Client.replan = replan
