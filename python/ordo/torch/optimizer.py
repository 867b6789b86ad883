"""optimizer: DistributedOptimizer, a torch optimizer whose gradients or updates go through ordo.

The wrapped optimizer keeps its class (an instance of a subclass made on the fly that shares the
original's attributes, as Horovod does), so param_groups, state_dict, zero_grad and LR
schedulers work as before. A hook per parameter (register_post_accumulate_grad_hook) sends each
gradient the moment autograd has it, in backward order; step() waits for the results.
  mode="gradients": the servers average the workers' gradients; step() writes the mean into
                    .grad and runs the wrapped optimizer (any torch optimizer). Once planned
                    (model=), each parameter is updated as its mean arrives, by the forward
                    of its module (ordo.torch.per_param), when the optimizer allows it.
  mode="server":    the servers run SGD with the optimizer's lr, momentum and weight decay (per
                    param group); the new parameter is pulled straight into the parameter's data.
In host groups ([cluster] local_size > 1 with an [intra] backend) both modes run through the
library's bound model instead (ordo.torch.groups): the gradients are produced in the group's
memory, and the values come back per tensor in the plan's order. So does server mode on the
sparse path (the conf's [push] mode = sparse, compression=Compression.oktopk): the library
sparsifies the whole gradient block once per step and patches the parameters the servers
changed.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import torch

from ordo.torch import collectives as co
from ordo.torch import compression as cp
from ordo.torch import groups as gr
from ordo.torch import per_param as pp
from ordo.torch import residuals as res
from ordo.torch import runtime as rt
from ordo.torch.staging import CudaStaging

MODES = ("gradients", "server")
JOIN_FLAG = "ordo.torch.join"  # 1 value pushed each step: the mean tells how many joined
PROFILE_ITERATIONS = 5  # iterations profiled (after one warm-up) before the plan (model=)


def _check_sgd(opt: torch.optim.Optimizer) -> None:
    """_check_sgd raises ValueError unless the servers can run opt's update exactly."""
    if type(opt) is not torch.optim.SGD:
        raise ValueError(f"ordo.torch: mode='server' runs torch.optim.SGD on the servers; "
                         f"{type(opt).__name__} cannot run there (use mode='gradients')")
    for i, g in enumerate(opt.param_groups):
        for key, plain in (("nesterov", False), ("dampening", 0), ("maximize", False)):
            if g.get(key, plain) != plain:
                raise ValueError(f"ordo.torch: mode='server': param group {i} has {key}="
                                 f"{g[key]}; the servers run SGD without it (use "
                                 "mode='gradients')")


class Options:
    """Options are Horovod's DistributedOptimizer arguments past the ones ordo had: the wire
    codec, the op (Average, or Sum: the servers' mean times the workers) and the gradient
    predivide factor (the push divided by it, the mean multiplied back)."""

    def __init__(self, codec: str = "none", op: int = co.Average, predivide: float = 1.0):
        self.codec = codec
        self.op = op
        self.predivide = predivide

    def postscale(self, runtime: rt.Runtime) -> float:
        """postscale is the factor on the servers' mean: predivide, times the workers for
        Sum."""
        n = runtime.live()[1] if self.op == co.Sum else 1
        return self.predivide * n


def _hyper(group: dict) -> tuple[float, float, float]:
    lr = group["lr"]
    lr = float(lr.item() if isinstance(lr, torch.Tensor) else lr)
    return lr, float(group.get("momentum", 0.0)), float(group.get("weight_decay", 0.0))


class _Param:
    """_Param is what the hooks know of one parameter."""

    def __init__(self, name: str, param: torch.Tensor, tensor: rt.Tensor):
        self.name = name
        self.param = param
        self.tensor = tensor
        self.priority = tensor.index  # forward order: the first layer's leave first
        # A CUDA parameter's gradient goes out from, and its result comes back into, pinned
        # host buffers, copied on a side stream (ordo.torch.staging).
        self.cuda = param.is_cuda
        pinned = {"dtype": torch.float32, "pin_memory": True}
        self.host = torch.empty(param.shape, **pinned) if self.cuda else None
        if self.cuda:
            self.recv = torch.empty(param.shape, **pinned)
        else:
            self.recv = torch.empty_like(param) if tensor.kind == rt.AVERAGE else param.data
        self.handle: Any = None
        self.grad: torch.Tensor | None = None  # what was pushed, kept until it completes
        self.passes = 0  # backward passes since the last step
        self.pushed = False  # pushed this step


class _Distributed:
    """_Distributed holds the methods DistributedOptimizer adds to the wrapped class."""

    _ordo_rt: rt.Runtime
    _ordo_mode: str
    _ordo_params: list[_Param]

    def _ordo_setup(self, runtime: rt.Runtime, named: list[tuple[str, torch.Tensor]],
                    mode: str, backward_passes_per_step: int, model: Any,
                    per_parameter: bool, opts: Options | None = None) -> None:
        self._ordo_rt = runtime
        self._ordo_mode = mode
        self._ordo_opts = opts = opts or Options()
        # gradients mode, once planned: the optimizer per parameter (ordo.torch.per_param)
        self._ordo_per_parameter = per_parameter and mode == "gradients"
        self._ordo_updates: pp.PerParameterUpdates | None = None
        self._ordo_passes = backward_passes_per_step
        self._ordo_iteration = 0
        group_of = {id(p): g for g in self.param_groups for p in g["params"]}
        names = {id(p): n for n, p in named}
        missing = [i for i, p in enumerate(group_of) if p not in names]
        if missing:
            raise ValueError(f"ordo.torch: {len(missing)} parameter(s) of the optimizer are not "
                             "in named_parameters (every parameter needs a name, the same on "
                             "every worker: pass model.named_parameters())")
        params = []
        for name, p in named:
            if id(p) not in group_of:
                continue  # named but not optimized (frozen, or in another optimizer)
            rt.check_tensor(p, f"parameter {name!r}")
            if mode == "server":
                hyper = _hyper(group_of[id(p)])
                t = runtime.declare(name, p.numel(), rt.SGD, hyper, every_step=True,
                                    codec=opts.codec)
            else:
                t = runtime.declare(name, p.numel(), rt.AVERAGE, every_step=True,
                                    codec=opts.codec)
            params.append(_Param(name, p, t))
        self._ordo_params = params
        # error feedback: this worker's residuals go in state_dict (ordo.torch.residuals)
        self._ordo_residuals = res.Residuals(runtime, opts.codec,
                                             [(q.name, q.param.numel()) for q in params],
                                             self._ordo_settle)
        # join(): a rank out of data pushes zeros with this flag at 1 until every rank has
        # (flat gradients mode; the flag is one more value per step)
        self._ordo_join_flag = None
        if mode == "gradients" and not runtime.in_groups():
            k = sum(1 for n in runtime.tensors if n.startswith(JOIN_FLAG))
            t = runtime.declare(f"{JOIN_FLAG}.{k}", 1, rt.AVERAGE, every_step=True)
            self._ordo_join_flag = _Param(f"{JOIN_FLAG}.{k}", torch.zeros(1), t)
            self._ordo_join_flag.priority = t.index
            runtime.optimizers.append(self)
        self._ordo_staging = CudaStaging() if any(q.cuda for q in params) else None
        self._ordo_hooks = [q.param.register_post_accumulate_grad_hook(self._ordo_hook)
                            for q in params]
        self._ordo_by_id = {id(q.param): q for q in params}
        self._ordo_by_index = {q.tensor.index: q for q in params}
        self._ordo_gated = False
        self._ordo_synced = False
        # host groups: whole iterations through the bound model, bound at the join
        self._ordo_bound = gr.BoundSteps(self) if runtime.bound_model() else None
        if self._ordo_bound is not None:
            self._ordo_groups_seam(model)
        else:
            self._ordo_plan_seam(model)
        # The run's metrics count the samples of each step: the batch of the model's last
        # training forward (model= given), else none.
        self._ordo_batch = 0
        if model is not None:
            model.register_forward_pre_hook(self._ordo_count_batch)
        # The join waits for the first transfer, unless something must happen before the first
        # forward: the servers' initial values (server mode) or a broadcast asked for before
        # the tensors were known.
        if self._ordo_bound is not None:
            runtime.on_join.append(self._ordo_bound.bind)
        elif mode == "server":
            runtime.on_join.append(self._ordo_pull_initial)
        if runtime.on_join:
            runtime.join()

    # ---- the transfers --------------------------------------------------------------------

    def _ordo_pull_initial(self) -> None:
        """Rank 0's parameters become the servers' initial values; every worker pulls them."""
        client = self._ordo_rt.client
        if client.rank == 0:
            for q in self._ordo_params:
                client.init(q.tensor.index, q.param.data.cpu())
        for q in self._ordo_params:
            q.handle = client.pull(q.tensor.index, q.recv, q.priority)
        self._ordo_wait_all()

    def _ordo_hook(self, p: torch.Tensor) -> None:
        q = self._ordo_by_id[id(p)]
        q.passes += 1
        if q.passes < self._ordo_passes:
            return
        if q.pushed:
            raise RuntimeError(f"ordo.torch: gradient of {q.name!r} produced again before "
                               "step(): call step() after each backward (or set "
                               "backward_passes_per_step)")
        if self._ordo_bound is not None:
            if self._ordo_gated:  # its module did not run: last step's value first
                self._ordo_bound.wait([q.tensor.index])
            self._ordo_bound.grad_ready(q, p.grad)
            return
        if q.handle is not None:  # gated: last step's pull, its module did not run
            self._ordo_wait([q.tensor.index])
        self._ordo_push(q, p.grad)

    def _ordo_push(self, q: _Param, grad: torch.Tensor | None) -> None:
        self._ordo_rt.join()
        if grad is None:
            grad = torch.zeros_like(q.param)
        elif grad.is_sparse:  # Horovod's sparse_as_dense; the servers sum dense tensors
            grad = grad.to_dense()
        elif not grad.is_contiguous():
            grad = grad.contiguous()
        # Horovod's scaling: 1/passes and 1/gradient_predivide_factor before the sum
        scale = self._ordo_passes * self._ordo_opts.predivide
        if scale != 1.0:
            grad = grad / scale
        q.grad = grad
        q.pushed = True
        if q.cuda:  # pushed once its copy to q.host is done, here or at a later call
            self._ordo_staging.to_host(q, grad, q.host)
            self._ordo_push_staged(block=False)
            return
        q.handle = self._ordo_rt.client.pushpull(q.tensor.index, grad, q.recv, q.priority)

    def _ordo_push_staged(self, block: bool) -> None:
        """_ordo_push_staged pushes the CUDA gradients whose copies to host have finished
        (with block: all of them, waiting for their copies)."""
        if self._ordo_staging is None:
            return
        for q in self._ordo_staging.ready(block):
            q.handle = self._ordo_rt.client.pushpull(q.tensor.index, q.host, q.recv, q.priority)

    def _ordo_push_missing(self) -> None:
        """Every worker pushes every tensor each step: what no hook pushed goes now (its
        gradient, zeros without one)."""
        for q in self._ordo_params:
            if not q.pushed:
                self._ordo_push(q, q.param.grad)
        self._ordo_push_flag(0.0)

    def _ordo_push_flag(self, value: float) -> None:
        """_ordo_push_flag pushes this step's join flag (1: this rank joined)."""
        f = self._ordo_join_flag
        if f is None or f.pushed:
            return
        if f.handle is not None:  # gated steps: last step's flag
            f.handle.wait()
        f.param.fill_(value)
        f.pushed = True
        f.handle = self._ordo_rt.client.pushpull(f.tensor.index, f.param, f.recv, f.priority)

    def _ordo_joined_count(self) -> int:
        """_ordo_joined_count waits for this step's join flag: the ranks that joined."""
        f = self._ordo_join_flag
        if f is None or f.handle is None:
            return 0
        f.handle.wait()
        f.handle = None
        return round(float(f.recv[0]) * self._ordo_rt.live()[1])

    def _ordo_wait_all(self) -> None:
        self._ordo_wait([q.tensor.index for q in self._ordo_params])

    def synchronize(self) -> None:
        """synchronize pushes what no hook pushed this step (zeros for a parameter without a
        gradient), then waits for every result: the mean gradient written into .grad
        (gradients mode; call it before step() to clip them) or the new parameters (server)."""
        if self._ordo_synced:
            return
        if self._ordo_bound is not None:
            self._ordo_bound.end_iteration(between=self._ordo_plan_step)
            self._ordo_bound.wait_all()
            self._ordo_synced = True
            return
        if self._ordo_gated:
            # the pulls of the last step (gradients mode: and their updates); pushes wait for
            # backward
            self._ordo_wait_all()
            return
        self._ordo_push_missing()
        self._ordo_wait_all()
        self._ordo_joined_count()
        if self._ordo_mode == "gradients":
            post = self._ordo_opts.postscale(self._ordo_rt)
            for q in self._ordo_params:
                if q.param.grad is None or q.param.grad.is_sparse:
                    q.param.grad = torch.empty_like(q.param)
                if q.cuda:
                    self._ordo_staging.to_device(q.param.grad, q.recv)
                else:
                    q.param.grad.copy_(q.recv)
                if post != 1.0:
                    q.param.grad.mul_(post)
        self._ordo_synced = True

    def join_step(self) -> int:
        """join_step is one step of a rank that ran out of data (ordo.torch.join): zeros for
        every gradient and the join flag at 1, the results dropped; it returns how many ranks
        have joined."""
        if self._ordo_gated:  # the last step's values (and per-parameter updates) first
            self._ordo_wait_all()
        updates, self._ordo_updates = self._ordo_updates, None  # the zeros update nothing
        try:
            for q in self._ordo_params:
                if not q.pushed:
                    q.passes = self._ordo_passes
                    self._ordo_push(q, torch.zeros_like(q.param))
            self._ordo_push_flag(1.0)
            self._ordo_push_staged(block=True)
            self._ordo_wait_all()
        finally:
            self._ordo_updates = updates
        joined = self._ordo_joined_count()
        for q in self._ordo_params:
            q.passes = 0
            q.pushed = False
        self._ordo_join_flag.pushed = False
        self._ordo_iteration += 1
        return joined

    def skip_synchronize(self) -> Any:
        """skip_synchronize is Horovod's context for step() after synchronize(): ordo's
        step() never waits twice for one step, so it does nothing."""
        import contextlib
        return contextlib.nullcontext()

    def set_backward_passes_per_step(self, passes: int) -> None:
        """set_backward_passes_per_step changes the passes accumulated before each push."""
        if passes < 1:
            raise ValueError("ordo.torch: backward_passes_per_step must be at least 1")
        self._ordo_passes = passes

    def step(self, closure: Any = None) -> Any:
        """step waits for this step's transfers, then runs the wrapped optimizer on the
        averaged gradients (gradients mode) or nothing more (server mode: the servers
        stepped; once gated, each module's forward waits for its own parameters)."""
        if closure is not None:
            raise ValueError("ordo.torch: DistributedOptimizer.step takes no closure")
        gated = self._ordo_gated
        if self._ordo_bound is not None:
            if not self._ordo_synced:
                # the profile's step and the re-plan between this iteration and the next
                self._ordo_bound.end_iteration(between=self._ordo_plan_step)
                if not gated:
                    self._ordo_bound.wait_all()
        elif gated:
            self._ordo_push_missing()
        else:
            self.synchronize()
        for q in self._ordo_params:
            q.passes = 0
            q.pushed = False
        if self._ordo_join_flag is not None:
            self._ordo_join_flag.pushed = False
        self._ordo_synced = False
        self._ordo_iteration += 1
        if self._ordo_bound is None:
            self._ordo_plan_step()
        result = None
        if self._ordo_mode == "server":
            self._ordo_check_hyper()
        elif not gated:  # gated: each parameter is updated when its mean arrives
            result = super().step()  # type: ignore[misc]
        self._ordo_rt.client.step(self._ordo_batch)
        return result

    def _ordo_count_batch(self, module: Any, inputs: tuple) -> None:
        if module.training and inputs and isinstance(inputs[0], torch.Tensor) \
                and inputs[0].dim() > 0:
            self._ordo_batch = int(inputs[0].shape[0])

    def _ordo_check_hyper(self) -> None:
        """The servers took the hyperparameters at the join; a change (an LR schedule) would
        silently not apply, so it is an error."""
        group_of = {id(p): g for g in self.param_groups for p in g["params"]}
        for q in self._ordo_params:
            now = _hyper(group_of[id(q.param)])
            if now != q.tensor.hyper:
                raise ValueError(f"ordo.torch: mode='server': {q.name!r}'s (lr, momentum, "
                                 f"weight_decay) changed from {q.tensor.hyper} to {now}; the "
                                 "servers keep those of the join (use mode='gradients' with "
                                 "an LR schedule)")

    def state_dict(self) -> dict[str, Any]:
        """state_dict is the wrapped optimizer's, plus this worker's error-feedback residuals
        under "ordo_residuals" when the run's compression keeps them (ordo.torch.residuals):
        take it between steps; each rank's is its own."""
        state = super().state_dict()  # type: ignore[misc]
        blob = self._ordo_residuals.save()
        if blob is not None:
            state[res.RESIDUALS] = blob
        return state

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """load_state_dict is the wrapped optimizer's; the residuals of this rank's
        state_dict go back to the library before this worker's first push (another rank's
        are left out, with a warning)."""
        blob = state_dict.get(res.RESIDUALS)
        if blob is not None:
            self._ordo_residuals.check(blob)  # refused before anything is loaded
        super().load_state_dict(res.without(state_dict))  # type: ignore[misc]
        if blob is not None:
            self._ordo_residuals.load(blob)

    def _ordo_settle(self) -> None:
        """_ordo_settle waits for this optimizer's transfers still in flight (gated steps
        leave them so): a residual is updated as its push leaves. The bound model drains its
        own."""
        if self._ordo_bound is not None:
            return
        self._ordo_push_staged(block=True)
        self._ordo_wait_all()
        f = self._ordo_join_flag
        if f is not None and f.handle is not None:
            f.handle.wait()  # kept: _ordo_joined_count reads it

    def zero_grad(self, set_to_none: bool = True) -> None:
        """zero_grad is the optimizer's; in host groups the gradient buffers are zeroed in
        place, so that each CPU parameter's .grad stays the view over the group's memory."""
        if self._ordo_bound is not None and self._ordo_bound.bound:
            self._ordo_bound.zero_grad()
            return
        super().zero_grad(set_to_none)  # type: ignore[misc]

    def remove_hooks(self) -> None:
        """remove_hooks detaches the gradient hooks (the optimizer then works locally)."""
        for h in self._ordo_hooks:
            h.remove()
        self._ordo_hooks = []

    # ---- the planned order (model=) -------------------------------------------------------
    # The seam for ordo.torch.profile (ModelProfiler, ForwardGate) and Client.replan: with
    # model= given and both there, the first iterations are profiled (ModelProfiler counts
    # them; every worker reaches ready() at the same step), then the scheduler plans from
    # rank 0's profile (Client.replan, collective) and from then on each tensor's transfers
    # carry the plan's priority. In server mode each module's forward then waits only for its
    # own parameters (ForwardGate) instead of step() waiting for all of them. In host groups
    # (_ordo_groups_seam) the same profile and re-plan run on the bound model, the re-plan
    # between one iteration's iter_end and the next one's iter_begin.

    def _ordo_plan_seam(self, model: Any) -> None:
        self._ordo_profiler = None
        self._ordo_gate = None
        if model is None:
            return
        try:
            from ordo.torch import profile  # type: ignore[attr-defined]
        except ImportError:
            return
        if not (hasattr(profile, "ModelProfiler") and hasattr(self._ordo_rt.client, "replan")):
            return
        self._ordo_model = model
        # The profile lists every tensor of the cluster, in index order: the parameters, and
        # a stand-in of the right size for each tensor of the program's own (declare()).
        param_of = {q.name: q.param for q in self._ordo_params}
        named = [(name, param_of.get(name, torch.empty(t.numel)))
                 for name, t in sorted(self._ordo_rt.tensors.items(), key=lambda kv: kv[1].index)]
        self._ordo_profiler = profile.ModelProfiler(model, named, iterations=PROFILE_ITERATIONS)
        self._ordo_profiler.start()

    def _ordo_groups_seam(self, model: Any) -> None:
        """In host groups with model= given, each module's forward waits for its own values
        from the first step (ForwardGate over the bound model's arrivals, which come in the
        order of the plan's priorities): the server mode's parameters, or in gradients mode
        the mean gradients, applied per parameter when the optimizer allows it. The first
        steps are profiled as on the flat path and the cluster re-plans from rank 0's profile
        (Client.replan on the bound model, between two iterations): from then on the bound
        model asks for the values, and pushes, in the new plan's order."""
        self._ordo_profiler = None
        self._ordo_gate = None
        if model is None:
            return
        from ordo.torch import profile  # type: ignore[attr-defined]
        if self._ordo_mode == "server" or self._ordo_per_parameter:
            if self._ordo_mode == "gradients":
                self._ordo_updates = pp.PerParameterUpdates(
                    self._ordo_opt_class, self, [q.param for q in self._ordo_params])
            index = {q.param: q.tensor.index for q in self._ordo_params}
            self._ordo_gate = profile.ForwardGate(model, index, self._ordo_bound.wait)
            self._ordo_gated = True
            # a checkpoint reads the values after the last step
            model.register_state_dict_pre_hook(lambda *_: self._ordo_bound.wait_all())
        # after the gate's hooks: a module's profiled time starts once its values are in
        gate = self._ordo_gate
        self._ordo_plan_seam(model)
        self._ordo_gate = gate

    def _ordo_plan_step(self) -> None:
        prof = self._ordo_profiler
        if prof is None:
            return
        prof.step_done()
        if not prof.ready():
            return
        self._ordo_profiler = None
        client = self._ordo_rt.client
        doc = prof.to_json() if client.rank == 0 else None
        priorities = client.replan(doc, rt.BROADCAST_TIMEOUT_MS)
        for q in self._ordo_params:
            q.priority = int(priorities[q.tensor.index])
        if self._ordo_bound is not None:
            return  # host groups: gated (or not) from the first step (_ordo_groups_seam)
        if self._ordo_mode == "gradients" and self._ordo_per_parameter:
            self._ordo_updates = pp.PerParameterUpdates(self._ordo_opt_class, self,
                                                        [q.param for q in self._ordo_params])
            # the values a checkpoint reads are the updated ones
            self._ordo_model.register_state_dict_pre_hook(
                lambda *_: self._ordo_wait_all())
        if self._ordo_mode == "server" or self._ordo_updates is not None:
            from ordo.torch import profile  # type: ignore[attr-defined]
            index = {q.param: q.tensor.index for q in self._ordo_params}
            self._ordo_gate = profile.ForwardGate(self._ordo_model, index, self._ordo_wait)
            self._ordo_gated = True

    def _ordo_wait(self, tensor_indices: list[int]) -> None:
        """_ordo_wait waits for the pulls of the given tensors (ForwardGate's wait_fn) and,
        with per-parameter updates, applies each mean to its parameter."""
        self._ordo_push_staged(block=True)
        for i in tensor_indices:
            q = self._ordo_by_index[i]
            if q.handle is not None:
                q.handle.wait()
                q.handle = None
                q.grad = None
                if q.cuda and q.tensor.kind != rt.AVERAGE:
                    self._ordo_staging.to_device(q.param.data, q.recv)  # the new parameter
                if self._ordo_updates is not None and q.tensor.kind == rt.AVERAGE:
                    mean = q.recv.to(q.param.device) if q.cuda else q.recv
                    post = self._ordo_opts.postscale(self._ordo_rt)
                    if post != 1.0:
                        mean = mean * post
                    self._ordo_updates.apply(q.param, mean)


def horovod_options(runtime: rt.Runtime, mode: str, compression: Any, op: int | None,
                    gradient_predivide_factor: float, num_groups: int, groups: Any,
                    process_set: Any) -> Options:
    """horovod_options checks Horovod's DistributedOptimizer arguments and returns what ordo
    does with them (see ordo.torch.DistributedOptimizer)."""
    call = "DistributedOptimizer"
    co.check_process_set(process_set, call)
    op = co.resolve_op(None, op, call)
    if op not in (co.Average, co.Sum):
        raise ValueError(f"ordo.torch.{call}: op={co.OP_NAMES[op]}; the servers average or "
                         "sum gradients (op=Average or Sum)")
    if gradient_predivide_factor <= 0:
        raise ValueError(f"ordo.torch.{call}: gradient_predivide_factor must be > 0")
    if gradient_predivide_factor != 1.0 and op != co.Average:
        raise ValueError(f"ordo.torch.{call}: gradient_predivide_factor needs op=Average "
                         "(as in Horovod)")
    if mode == "server" and (op != co.Average or gradient_predivide_factor != 1.0):
        raise ValueError(f"ordo.torch.{call}: mode='server' runs SGD on the mean gradient; "
                         "op=Sum and gradient_predivide_factor need mode='gradients'")
    if (op != co.Average or gradient_predivide_factor != 1.0) and runtime.in_groups():
        raise ValueError(f"ordo.torch.{call}: in host groups the bound model averages whole "
                         "iterations; op=Sum and gradient_predivide_factor need flat workers "
                         "([intra] backend = none)")
    if num_groups and groups is None:
        groups = num_groups
    if groups is not None and not (isinstance(groups, int) and groups >= 0) and \
            not (isinstance(groups, list) and all(isinstance(g, list) for g in groups)):
        raise ValueError(f"ordo.torch.{call}: groups={groups!r}: a number of groups or a "
                         "list of lists of parameters")
    codec = cp.codec_of(compression)
    density = cp.oktopk_density(codec)
    if density is not False:
        check_oktopk(runtime, mode, density, call)
        return Options("none", op, float(gradient_predivide_factor))  # the path compresses
    if codec != "none" and runtime.sparse():
        raise ValueError(f"ordo.torch.{call}: compression={codec!r} with the conf's [push] mode "
                         "= sparse: the sparse path is a compressor of its own "
                         "(Compression.oktopk); pass that, or none")
    if codec != "none" and not hasattr(runtime.client, "declare_compression"):
        raise ValueError(f"ordo.torch.{call}: compression={codec!r} needs libordo's wire "
                         "codecs (Client.declare_compression), which this build lacks; use "
                         "Compression.none")
    return Options(codec, op, float(gradient_predivide_factor))


def check_oktopk(runtime: rt.Runtime, mode: str, density: float | None, call: str) -> None:
    """check_oktopk raises ValueError unless the run can take Compression.oktopk: server mode,
    the conf's [push] mode = sparse and, for a density given, the conf's push.density."""
    if mode != "server":
        raise ValueError(f"ordo.torch.{call}: Compression.oktopk needs mode='server': the "
                         "servers run SGD on the entries they select (docs/sparse.md)")
    if not runtime.sparse():
        raise ValueError(f"ordo.torch.{call}: Compression.oktopk needs [push] mode = sparse in "
                         "the run's conf (the scheduler agrees the global threshold for every "
                         "process of the run): add it to the conf ordo-launch starts")
    conf = runtime.density()
    conf = rt.SPARSE_DENSITY if conf is None else conf
    if density is not None and abs(density - conf) > 1e-12 * max(1.0, conf):
        raise ValueError(f"ordo.torch.{call}: Compression.oktopk({density!r}) but the run's "
                         f"conf has push.density = {conf!r} (the scheduler's k comes from it): "
                         "set [push] density, or pass Compression.oktopk()")


def horovod_names(optimizer: torch.optim.Optimizer) -> list[tuple[str, torch.Tensor]]:
    """horovod_names names the optimizer's parameters as Horovod does without
    named_parameters (allreduce.noname.GROUP.INDEX), the same on every worker."""
    return [(f"allreduce.noname.{i}.{j}", p) for i, g in enumerate(optimizer.param_groups)
            for j, p in enumerate(g["params"])]


def make(optimizer: torch.optim.Optimizer, runtime: rt.Runtime,
         named_parameters: Iterable[tuple[str, torch.Tensor]] | None, mode: str,
         backward_passes_per_step: int, model: Any,
         per_parameter: bool | None = None,
         opts: Options | None = None) -> torch.optim.Optimizer:
    """make returns optimizer as a DistributedOptimizer (see ordo.torch.DistributedOptimizer).
    per_parameter (gradients mode, model= given): None = when the optimizer's class allows it
    (ordo.torch.per_param.SEPARABLE), True = required (ValueError otherwise), False = never."""
    if mode not in MODES:
        raise ValueError(f"ordo.torch: mode={mode!r}; choose 'gradients' or 'server'")
    if per_parameter and not pp.separable(type(optimizer)):
        raise ValueError(f"ordo.torch: per_parameter=True: {type(optimizer).__name__} may "
                         "couple parameters in its step; per-parameter updates need one of "
                         f"{', '.join(c.__name__ for c in pp.SEPARABLE)}")
    if per_parameter is None:
        per_parameter = pp.separable(type(optimizer))
    if backward_passes_per_step < 1:
        raise ValueError("ordo.torch: backward_passes_per_step must be at least 1")
    if mode == "server":
        _check_sgd(optimizer)
    elif runtime.sparse():
        raise ValueError("ordo.torch: the conf's [push] mode = sparse (Compression.oktopk) "
                         "needs mode='server': the servers run SGD on the entries they select")
    if named_parameters is None:
        named_parameters = model.named_parameters() if model is not None else \
            horovod_names(optimizer)
    named = list(named_parameters)
    seen: set[str] = set()
    for name, _ in named:
        if name in seen:
            raise ValueError(f"ordo.torch: parameter name {name!r} appears twice")
        seen.add(name)
    cls = type(optimizer.__class__.__name__, (_Distributed, optimizer.__class__), {})
    dist = cls.__new__(cls)
    dist.__dict__ = optimizer.__dict__  # the same param_groups, state, hooks and defaults
    dist._ordo_opt_class = type(optimizer)
    dist._ordo_setup(runtime, named, mode, backward_passes_per_step, model, per_parameter,
                     opts)
    return dist
