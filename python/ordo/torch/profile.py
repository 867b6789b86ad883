"""ordo.torch.profile: a PyTorch model as an ordo-model/1 profile, and forward gates.

ModelProfiler measures a model while it trains: the module graph (from torch.fx where the
model traces; otherwise the leaf modules' calls in the order their forward hooks fire, each
reading the calls whose outputs its arguments are or were computed from, found in the
autograd graph) and each module's forward and backward times (medians
over the measured iterations, the first iteration discarded as warm-up). to_json() writes
the graph as ordo-model/1 (docs/models.md) whose parameters are exactly the named
parameters given, so the scheduler can plan the transfer order from it (Client.replan) and
`ordo-plan order/simulate/merge` can read it offline (export_profile).

Forward times come from forward pre/post hooks. A module's backward starts when autograd runs
the node that produced its output (a pre-hook on that node, robust to in-place ops that
follow); its backward time is the time until the next module's backward starts, and the last
one's until its parameters' gradients are computed. Function calls of an fx graph
(torch.flatten, +) are ops with zero times: the time they take is counted in the modules
around them.

ForwardGate makes each module's forward wait for its own parameters only (forward pre-hooks),
so the forward pass starts as soon as the first layer's parameters arrived.
"""
from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

FORMAT = "ordo-model/1"


_WALK_LIMIT = 100000  # autograd nodes visited to find one module call's producers


def _tensors(x: Any) -> list[torch.Tensor]:
    """_tensors lists the tensors in x (a tensor, or lists, tuples and dicts of them)."""
    if isinstance(x, torch.Tensor):
        return [x]
    if isinstance(x, dict):
        x = list(x.values())
    if isinstance(x, (list, tuple)):
        return [t for o in x for t in _tensors(o)]
    return []


def _first_grad_fn(out: Any) -> Any:
    """_first_grad_fn returns the autograd node of the first tensor in out that has one."""
    if isinstance(out, torch.Tensor):
        return out.grad_fn
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for o in out:
            fn = _first_grad_fn(o)
            if fn is not None:
                return fn
    return None


class _Op:
    """_Op is one op of the profile: a module call (key = (module name, call index)) or an fx
    function node (key None), with the ops it reads and the parameters it owns."""

    def __init__(self, name: str, key: tuple[str, int] | None):
        self.name = name
        self.key = key
        self.inputs: list[str] = []
        self.params: list[str] = []


class ModelProfiler:
    """ModelProfiler(model, named_parameters) profiles model over its next training
    iterations: start(), then step_done() after each iteration's optimizer step until
    ready(); to_json() is the profile. named_parameters maps names to the parameters the
    profile lists (those the cluster holds)."""

    def __init__(self, model: nn.Module,
                 named_parameters: dict[str, nn.Parameter] | Iterable[tuple[str, nn.Parameter]],
                 iterations: int = 5, batch: int = 1, name: str | None = None):
        if iterations < 1:
            raise ValueError(f"iterations must be >= 1, not {iterations}")
        self.model = model
        self.named = dict(named_parameters)
        self.iterations = iterations
        self.batch = max(1, int(batch))
        self.name = name or type(model).__name__
        self.traced = False  # the graph came from torch.fx
        self._name_of = {id(p): n for n, p in self.named.items()}
        self._module_name = {m: n for n, m in model.named_modules()}
        self._handles: list[Any] = []
        self._ops: list[_Op] | None = None  # fixed by fx, or by the first measured iteration
        self._steps = 0  # step_done calls
        self._fwd: dict[tuple[str, int], list[float]] = defaultdict(list)  # medians' inputs
        self._bwd: dict[tuple[str, int], list[float]] = defaultdict(list)
        self._reset_iteration()
        self._sync = any(p.is_cuda for p in self.named.values())

    # ---- hooks ----------------------------------------------------------------------------

    def _reset_iteration(self) -> None:
        self._calls: dict[str, int] = defaultdict(int)  # module name -> calls this iteration
        self._order: list[tuple[str, int]] = []  # module calls in forward firing order
        self._t_fwd: dict[tuple[str, int], float] = {}
        self._open: dict[str, list[float]] = defaultdict(list)  # pre-hook times per module
        self._bwd_start: list[tuple[float, tuple[str, int]]] = []
        self._grad_t: dict[str, float] = {}  # parameter name -> when its gradient was made
        self._key_of_node: dict[Any, tuple[str, int]] = {}  # autograd node -> module call
        # module outputs: id -> (module call, the tensor, its autograd node then)
        self._key_of_tensor: dict[int, tuple[tuple[str, int], torch.Tensor, Any]] = {}
        self._pending_inputs: dict[str, list[list[tuple[str, int]]]] = defaultdict(list)
        self._inputs: dict[tuple[str, int], list[tuple[str, int]]] = {}

    def _now(self) -> float:
        if self._sync:
            torch.cuda.synchronize()
        return time.perf_counter_ns() / 1000.0

    def _pre(self, module: nn.Module, args: Any) -> None:
        name = self._module_name[module]
        if self._ops is None:  # the hooks' graph is still to be made: find the data flow
            self._pending_inputs[name].append(self._producers(args))
        self._open[name].append(self._now())

    def _producers(self, args: Any) -> list[tuple[str, int]]:
        """_producers finds the module calls whose outputs args are, or were computed from
        (walking the autograd graph back to the nearest module outputs); none for arguments
        that are the model's input or were computed from it without gradients."""
        found: list[tuple[str, int]] = []
        nodes = []
        for t in _tensors(args):
            hit = self._key_of_tensor.get(id(t))
            if hit is not None and hit[1] is t and hit[2] is t.grad_fn:
                if hit[0] not in found:
                    found.append(hit[0])
            elif t.grad_fn is not None:  # (also an output modified in place since: walk)
                nodes.append(t.grad_fn)
        seen: set[Any] = set()
        while nodes and len(seen) < _WALK_LIMIT:
            node = nodes.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            key = self._key_of_node.get(node)
            if key is not None:
                if key not in found:
                    found.append(key)
                continue
            nodes.extend(fn for fn, _ in node.next_functions)
        return found

    def _post(self, module: nn.Module, args: Any, out: Any) -> None:
        t = self._now()
        name = self._module_name[module]
        if not self._open[name]:
            return
        t0 = self._open[name].pop()
        key = (name, self._calls[name])
        self._calls[name] += 1
        self._order.append(key)
        self._t_fwd[key] = t - t0
        if self._pending_inputs[name]:
            self._inputs[key] = self._pending_inputs[name].pop()
        fn = _first_grad_fn(out) if torch.is_grad_enabled() else None
        if self._ops is None:
            for t_out in _tensors(out):
                self._key_of_tensor[id(t_out)] = (key, t_out, t_out.grad_fn)
                if t_out.grad_fn is not None:
                    self._key_of_node.setdefault(t_out.grad_fn, key)
        if fn is not None:
            fn.register_prehook(lambda grads, key=key: self._bwd_start.append((self._now(), key)))

    def _param_hook(self, name: str) -> Callable[[torch.Tensor], None]:
        def hook(grad: torch.Tensor) -> None:
            self._grad_t.setdefault(name, self._now())
        return hook

    def start(self) -> ModelProfiler:
        """start builds the graph (torch.fx when the model traces) and installs the hooks;
        the next iteration is the warm-up."""
        if self._handles:
            return self
        timed = self._trace()
        if timed is None:  # no fx graph: time the leaf modules and chain them
            timed = [m for m in self.model.modules() if not any(True for _ in m.children())]
        for m in timed:
            self._handles.append(m.register_forward_pre_hook(self._pre))
            self._handles.append(m.register_forward_hook(self._post))
        for name, p in self.named.items():
            if p.requires_grad:
                self._handles.append(p.register_hook(self._param_hook(name)))
        return self

    def remove(self) -> None:
        """remove takes the hooks out of the model (what was measured stays)."""
        for h in self._handles:
            h.remove()
        self._handles = []

    # ---- the graph ------------------------------------------------------------------------

    def _trace(self) -> list[nn.Module] | None:
        """_trace builds the ops from torch.fx and returns the modules to time, or None when
        the model does not trace (data-dependent control flow, untraceable calls) or is one
        leaf module."""
        if not any(True for _ in self.model.children()):
            return None
        try:
            gm = torch.fx.symbolic_trace(self.model)
        except Exception:  # noqa: BLE001 -- any tracing failure means: use the hooks
            return None
        ops: list[_Op] = []
        op_of_node: dict[Any, _Op] = {}
        param_of_node: dict[Any, str] = {}
        calls: dict[str, int] = defaultdict(int)
        modules: list[nn.Module] = []
        for node in gm.graph.nodes:
            if node.op == "get_attr":
                try:
                    p = self.model.get_parameter(node.target)
                except (AttributeError, TypeError):
                    continue
                if id(p) in self._name_of:
                    param_of_node[node] = self._name_of[id(p)]
                continue
            if node.op not in ("call_module", "call_function", "call_method"):
                continue
            if node.op == "call_module":
                k = calls[node.target]
                calls[node.target] += 1
                op = _Op(node.target + (f"#{k}" if k else ""), (node.target, k))
                mod = self.model.get_submodule(node.target)
                if k == 0:
                    modules.append(mod)
                op.params = self._own(mod, recurse=True)
            else:
                op = _Op("fn:" + node.name, None)
            for arg in node.all_input_nodes:
                if arg in op_of_node and op_of_node[arg].name not in op.inputs:
                    op.inputs.append(op_of_node[arg].name)
                if arg in param_of_node and param_of_node[arg] not in op.params:
                    op.params.append(param_of_node[arg])
            ops.append(op)
            op_of_node[node] = op
        if not ops:
            return None
        self._ops = ops
        self.traced = True
        return modules

    def _own(self, module: nn.Module, recurse: bool) -> list[str]:
        """_own lists the profiled parameters of module (its own, or its whole subtree's)."""
        return [self._name_of[id(p)] for p in module.parameters(recurse=recurse)
                if id(p) in self._name_of]

    def _ops_from_hooks(self) -> list[_Op]:
        """_ops_from_hooks makes the ops of the hooks' graph from one iteration's firing
        order: each module call an op owning its module's direct parameters, its inputs the
        module calls whose outputs its arguments are or were computed from (the autograd
        graph)."""
        ops: list[_Op] = []
        op_of: dict[tuple[str, int], _Op] = {}
        for key in self._order:
            name, k = key
            op = _Op((name or "model") + (f"#{k}" if k else ""), key)
            op.params = self._own(self.model.get_submodule(name), recurse=False)
            op.inputs = [op_of[p].name for p in self._inputs.get(key, []) if p in op_of]
            ops.append(op)
            op_of[key] = op
        return ops

    # ---- iterations -----------------------------------------------------------------------

    def step_done(self) -> None:
        """step_done ends one training iteration (call it after the optimizer step)."""
        if self.ready() or not self._handles:
            return
        self._steps += 1
        if self._steps > 1:  # the first iteration is the warm-up
            if self._ops is None and self._order:
                self._ops = self._ops_from_hooks()
            for key, us in self._t_fwd.items():
                self._fwd[key].append(us)
            for key, us in self._backward_times().items():
                self._bwd[key].append(us)
        self._reset_iteration()
        if self.ready():
            self.remove()

    def _backward_times(self) -> dict[tuple[str, int], float]:
        """_backward_times: each module call's backward, from when its backward started to
        when the next one's started (the last: until its parameters' gradients were made)."""
        starts = sorted(self._bwd_start)
        out: dict[tuple[str, int], float] = {}
        for i, (t, key) in enumerate(starts):
            if i + 1 < len(starts):
                end = starts[i + 1][0]
            else:
                mod = self.model.get_submodule(key[0])
                ends = [self._grad_t[n] for n in self._own(mod, recurse=True) if n in self._grad_t]
                end = max(ends) if ends else t
            out[key] = max(0.0, end - t)
        return out

    def ready(self) -> bool:
        """ready tells whether the measured iterations (after the warm-up) are done."""
        return self._steps >= self.iterations + 1

    # ---- the profile ----------------------------------------------------------------------

    def to_json(self) -> str:
        """to_json returns the profile as ordo-model/1 text: ops in forward order with their
        median times in microseconds, parameters exactly the named parameters."""
        if self._ops is None:
            raise RuntimeError("ModelProfiler: no iteration measured yet (start, then "
                               "step_done after each iteration)")
        ops = [_copy(op) for op in self._ops]
        self._place_unowned(ops)
        out_ops = []
        for op in ops:
            fwd = statistics.median(self._fwd[op.key]) if op.key in self._fwd else 0.0
            bwd = statistics.median(self._bwd[op.key]) if op.key in self._bwd else 0.0
            out_ops.append({"name": op.name, "inputs": op.inputs, "params": op.params,
                            "fwd_us": round(fwd, 3), "bwd_us": round(bwd, 3)})
        params = [{"name": n, "shape": list(p.shape) or [1]} for n, p in self.named.items()]
        return json.dumps({"format": FORMAT, "name": self.name, "batch": self.batch,
                           "dtype": "float32", "params": params, "ops": out_ops}, indent=1)

    def _place_unowned(self, ops: list[_Op]) -> None:
        """_place_unowned gives each parameter no op reads (used through a parent module's
        code, or not in the model) to the first op inside its module's nearest ancestor that
        has one, else to the first op."""
        used = {n for op in ops for n in op.params}
        for name in self.named:
            if name in used:
                continue
            prefix = name.rsplit(".", 1)[0] if "." in name else ""
            target = None
            while target is None:
                target = next((op for op in ops if op.key and (
                    prefix == "" or op.key[0] == prefix or op.key[0].startswith(prefix + "."))),
                    None)
                if prefix == "":
                    break
                prefix = prefix.rsplit(".", 1)[0] if "." in prefix else ""
            (target or ops[0]).params.append(name)


def _copy(op: _Op) -> _Op:
    c = _Op(op.name, op.key)
    c.inputs = list(op.inputs)
    c.params = list(op.params)
    return c


def export_profile(model: nn.Module, example_input: Any, path: str, iterations: int = 5,
                   named_parameters: dict[str, nn.Parameter] | None = None) -> str:
    """export_profile runs forward and backward (the loss: the sum of the output) on
    example_input iterations + 1 times, writes the ordo-model/1 profile to path and returns
    its text (for ordo-plan offline).

    Args:
        model: the model to measure.
        example_input: one batch of its input.
        path: where the profile is written.
        iterations: the measured passes (one more warms up); times are their medians.
        named_parameters: the parameters to profile (default: model.named_parameters()
            that require gradients).

    Returns:
        The profile's JSON text (ordo-model/1, docs/formats.md).

    Raises:
        OSError: path cannot be written.
    """
    named = named_parameters if named_parameters is not None else {
        n: p for n, p in model.named_parameters() if p.requires_grad}
    batch = example_input.shape[0] if isinstance(example_input, torch.Tensor) and \
        example_input.dim() > 0 else 1
    prof = ModelProfiler(model, named, iterations=iterations, batch=batch).start()
    try:
        while not prof.ready():
            model.zero_grad(set_to_none=True)
            out = model(example_input)
            _loss(out).backward()
            prof.step_done()
    finally:
        prof.remove()
    text = prof.to_json()
    with open(path, "w") as f:
        f.write(text)
    return text


def _loss(out: Any) -> torch.Tensor:
    """_loss sums every floating tensor in out into one scalar."""
    if isinstance(out, torch.Tensor):
        return out.float().sum()
    if isinstance(out, dict):
        out = list(out.values())
    return sum(_loss(o) for o in out if isinstance(o, (torch.Tensor, list, tuple, dict)))


class ForwardGate:
    """ForwardGate(model, tensor_of_param, wait_fn) puts a forward pre-hook on every module
    that owns parameters in tensor_of_param: before the module runs it calls
    wait_fn([tensor indices of its own parameters]), so each module waits only for its own
    parameters. remove() takes the hooks out."""

    def __init__(self, model: nn.Module, tensor_of_param: dict[nn.Parameter, int],
                 wait_fn: Callable[[list[int]], None]):
        by_id = {id(p): t for p, t in tensor_of_param.items()}
        self._handles = []
        for module in model.modules():
            mine = sorted({by_id[id(p)] for p in module.parameters(recurse=False)
                           if id(p) in by_id})
            if mine:
                self._handles.append(module.register_forward_pre_hook(
                    lambda mod, args, mine=mine: wait_fn(list(mine))))

    def remove(self) -> None:
        """remove takes the hooks out of the model."""
        for h in self._handles:
            h.remove()
        self._handles = []
