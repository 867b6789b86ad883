"""groups: DistributedOptimizer in host groups ([cluster] local_size > 1 with an [intra] backend),
and on the sparse path ([push] mode = sparse, Compression.oktopk: the library's bound model
pushes the whole gradient block's top-k after iter_end, as ordo-worker's does).

In a host group the members sum their gradients inside the host and one owner per tensor (or
merge group) pushes and pulls, so a group moves whole iterations: the key-level calls
(push_pull) are refused and ordo.torch drives the model through the library's bound model
(Client.bind). Each optimized parameter is one tensor of the binding:

  gradients: a CPU parameter's .grad is a view over the tensor's gradient buffer
             (Client.grad_buffer), which under the shm backend is this member's area of the
             group's shared-memory segment: backward writes the gradient where the owner sums
             it, and nothing is copied on the way out. A CUDA parameter's gradient is copied
             there once (device to host); under the nccl backend the library copies it to
             its own device buffers for NCCL's reduce, and the values come back through host
             memory the same way (docs/torch.md, "Host groups").
  backend:   [intra] backend = auto resolves per worker from [intra] device, which
             BoundSteps sets from the parameters before the join when the conf leaves it
             auto: cuda (any CUDA parameter) takes nccl where libordo's NCCL plugin loads,
             else shm; the scheduler refuses a group whose members resolved differently.
  values:    each tensor's value of iteration t lands in its value buffer; it is copied into
             the parameter when taken (server mode: the new parameter; gradients mode: the
             mean gradient, into .grad or, gated, straight into the per-parameter update).
             A copy, not a view, because autograd keeps the parameters for backward while the
             library already writes the next iteration's values there: under the shm backend
             ([intra] values = shared, the default) the value buffer is the group's shared
             value itself, which the owner overwrites with the next one once every member
             handed over the tensor's gradient (each member takes a value before that).

Iteration t of the binding is the t-th step: backward hands each gradient over (grad_ready)
from its hook, step() ends the iteration (iter_end: it returns once the group summed every
gradient, so the buffers are free for zero_grad() and the next backward, while the owners'
pushes of the sums may still be on the wire) and starts the next (iter_begin), whose
values are the servers' parameters after t + 1 updates (server mode) or the mean of the
t-th gradients (gradients mode: a pull of version t + 1 of an "average" tensor). Arrivals
are taken in the order the library reports them (the plan's priorities); with model= each
module's forward waits only for its own tensors (ForwardGate), otherwise step() waits for
all of them.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ordo.torch import runtime as rt

WAIT_MS = 600_000  # one wait for the cluster; a dead peer fails it sooner ([fault] timeout_ms)


class BoundSteps:
    """BoundSteps runs a DistributedOptimizer's steps through the bound model (see the module
    docstring); opt is the _Distributed optimizer, gate whether modules wait for their own
    values (ForwardGate, set up by the optimizer)."""

    def __init__(self, opt: Any):
        self.opt = opt
        self.client = opt._ordo_rt.client
        self.server = opt._ordo_mode == "server"
        self.iteration = 0  # the binding's iteration the next backward belongs to
        self.arrived: dict[int, int] = {}  # tensor index -> newest iteration taken
        self.bound = False
        self.tell_device()

    def tell_device(self) -> None:
        """tell_device sets [intra] device (what intra.backend = auto resolves by) from where
        the parameters are, unless the conf, the environment or init()'s settings name it, or
        the cluster was joined already (then the library takes cpu: shm, which stages CUDA
        tensors through host memory too)."""
        runtime = self.opt._ordo_rt
        given = runtime.settings.get("intra.device") or rt.launcher_value("intra", "device",
                                                                          runtime.conf)
        if runtime.joined or str(given or "auto").strip() != "auto":
            return
        cuda = any(q.cuda for q in self.opt._ordo_params)
        self.client.set("intra.device", "cuda" if cuda else "cpu")

    # ---- binding ---------------------------------------------------------------------------

    def bind(self) -> None:
        """bind (at the join) binds the cluster's tensors, points every CPU parameter's .grad
        at its gradient buffer, sends rank 0's parameters as the initial values (server mode)
        and waits for iteration 0's values (server mode: every worker starts from rank 0's
        parameters)."""
        runtime = self.opt._ordo_rt
        extra = sorted(set(runtime.tensors) - {q.name for q in self.opt._ordo_params})
        if extra:
            raise RuntimeError(f"ordo.torch: in host groups every tensor must be a parameter of "
                               f"the DistributedOptimizer; {extra[:3]} are not (push_pull and "
                               "declare() are not available in groups)")
        c = self.client
        c.bind()
        for q in self.opt._ordo_params:
            i = q.tensor.index
            q.gview = torch.frombuffer(c.grad_buffer(i), dtype=torch.float32).view(q.param.shape)
            q.vview = torch.frombuffer(c.value_buffer(i), dtype=torch.float32).view(
                q.param.shape)
            if not q.cuda:
                q.gview.zero_()
                q.param.grad = q.gview
        self.bound = True
        if c.rank == 0 and self.server:
            # from the parameters themselves: under [intra] values = shared the value buffers
            # are the group's shared memory, which only the library writes
            order = sorted(self.opt._ordo_params, key=lambda q: q.tensor.index)
            with torch.no_grad():
                c.bound_init([q.param.data.detach().cpu().contiguous() for q in order])
        c.iter_begin(0)
        # every worker takes iteration 0's values before its first push, in gradients mode
        # too (zeros: an average tensor keeps no parameter): an owner's pull of them still
        # in flight would land in the group's memory after the next iteration's values
        self.wait([q.tensor.index for q in self.opt._ordo_params], 0)

    # ---- backward --------------------------------------------------------------------------

    def grad_ready(self, q: Any, grad: torch.Tensor | None) -> None:
        """grad_ready hands q's gradient of this iteration to the library: already in its
        buffer when .grad is the view (else copied there once), divided by the passes
        accumulated."""
        if grad is None:
            q.gview.zero_()
        elif grad.data_ptr() != q.gview.data_ptr():
            q.gview.copy_(grad)
            if not q.cuda:  # the next backward accumulates in the buffer itself
                q.param.grad = q.gview
        passes = self.opt._ordo_passes
        if passes > 1:
            q.gview.div_(passes)
        q.pushed = True
        self.client.grad_ready(q.tensor.index, self.iteration)

    def zero_grad(self) -> None:
        """zero_grad zeroes the gradient buffers in place (the .grad views stay) between
        steps; a CUDA parameter's .grad is set to None as torch does."""
        if any(q.pushed for q in self.opt._ordo_params):
            raise RuntimeError("ordo.torch: zero_grad() between backward and step(): in host "
                               "groups the gradients are being summed in the group's memory; "
                               "call zero_grad() before backward or after step()")
        for q in self.opt._ordo_params:
            if q.cuda:
                q.param.grad = None
            else:
                q.gview.zero_()
                q.param.grad = q.gview

    # ---- the step --------------------------------------------------------------------------

    def end_iteration(self, between: Callable[[], None] | None = None) -> None:
        """end_iteration pushes what no hook pushed (zeros without a gradient), ends this
        iteration (the gradient buffers summed, this iteration's values in; the owners' pushes
        may still be on the wire: the next forward overlaps them), calls between() (the
        re-plan's place: a host group's path stays, transfers in flight included) and asks for
        the next one's values."""
        for q in self.opt._ordo_params:
            if not q.pushed:
                self.grad_ready(q, q.param.grad)
        t = self.iteration
        self.client.iter_end(t, WAIT_MS)
        for q in self.opt._ordo_params:
            q.pushed = False
            q.passes = 0
        self.iteration = t + 1
        if between is not None:
            between()
        self.client.iter_begin(t + 1)

    def wait(self, indices: list[int], iteration: int | None = None) -> None:
        """wait takes arrivals until each of indices has its value of iteration (default: the
        current one's, the values after the last step); each value taken is copied into its
        parameter (server mode) or applied (gradients mode, gated)."""
        want = self.iteration if iteration is None else iteration
        missing = {i for i in indices if self.arrived.get(i, -1) < want}
        while missing:
            tensor, it, _ = self.client.next_arrival(WAIT_MS)
            if it < want or self.arrived.get(tensor, -1) >= it:
                continue
            self.arrived[tensor] = it
            self.take(tensor)
            missing.discard(tensor)

    def take(self, index: int) -> None:
        """take uses tensor index's value now in its value buffer."""
        q = self.opt._ordo_by_index[index]
        with torch.no_grad():
            if self.server:
                q.param.data.copy_(q.vview)
            elif self.arrived[index] == 0:
                pass  # gradients mode: iteration 0's values are zeros, no one's mean
            elif self.opt._ordo_updates is not None:
                mean = q.vview.to(q.param.device) if q.cuda else q.vview
                self.opt._ordo_updates.apply(q.param, mean)
            elif q.param.grad is not None:
                q.param.grad.copy_(q.vview)
            else:
                q.param.grad = q.vview.clone().to(q.param.device)

    def wait_all(self) -> None:
        """wait_all takes every value of the current iteration."""
        self.wait([q.tensor.index for q in self.opt._ordo_params])

