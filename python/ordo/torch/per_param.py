"""per_param: the user's optimizer applied to each parameter as soon as its mean arrived.

In gradients mode a step's means arrive one parameter at a time, in the plan's order. Instead of
one optimizer step over all of them once the last is in, PerParameterUpdates keeps one optimizer
of the user's class per parameter (as PyTorch's optimizer-in-backward does), sharing the user
optimizer's state and following its param group's hyperparameters (LR schedules apply), so a
parameter is updated when its module's forward needs it (ForwardGate) and the next forward pass
starts before the last mean is in. Only optimizers whose update of a parameter reads that
parameter alone qualify (SEPARABLE); others couple parameters (LBFGS) or may (a subclass with
its own step), and keep the whole step.
"""
from __future__ import annotations

import torch

SEPARABLE = (torch.optim.SGD, torch.optim.Adam, torch.optim.AdamW, torch.optim.Adagrad,
             torch.optim.Adadelta, torch.optim.Adamax, torch.optim.NAdam, torch.optim.RAdam,
             torch.optim.RMSprop, torch.optim.Rprop, torch.optim.ASGD)


def separable(opt_class: type) -> bool:
    """separable tells whether opt_class updates each parameter from its own gradient and
    state only (exactly one of SEPARABLE's classes: a subclass may change step)."""
    return opt_class in SEPARABLE


class PerParameterUpdates:
    """PerParameterUpdates steps opt's class on one parameter at a time, sharing opt.state."""

    def __init__(self, opt_class: type, opt: torch.optim.Optimizer,
                 params: list[torch.Tensor]):
        if not separable(opt_class):
            raise ValueError(f"ordo.torch: {opt_class.__name__} may couple parameters in its "
                             "step; per-parameter updates need one of "
                             f"{', '.join(c.__name__ for c in SEPARABLE)} (per_parameter=False "
                             "keeps the whole step)")
        self._group_of = {id(p): g for g in opt.param_groups for p in g["params"]}
        self._one: dict[int, torch.optim.Optimizer] = {}
        for p in params:
            hyper = {k: v for k, v in self._group_of[id(p)].items() if k != "params"}
            sub = opt_class([{**hyper, "params": [p]}])
            sub.state = opt.state  # one state for both: state_dict and checkpoints see it
            self._one[id(p)] = sub

    def apply(self, param: torch.Tensor, mean: torch.Tensor) -> None:
        """apply runs the optimizer's step on param with gradient mean; param.grad is left as
        it was (backward of the next step accumulates into it)."""
        sub = self._one[id(param)]
        g = self._group_of[id(param)]
        sub.param_groups[0].update({k: v for k, v in g.items() if k != "params"})
        old = param.grad
        param.grad = mean
        try:
            sub.step()
        finally:
            param.grad = old
