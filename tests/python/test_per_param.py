"""test_per_param: ordo.torch.per_param applies the user's optimizer one parameter at a time
exactly as one whole step would, shares the optimizer's state and follows its hyperparameters,
and refuses optimizers that may couple parameters."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")

from ordo.torch import per_param as pp  # noqa: E402


def _net() -> torch.nn.Module:
    torch.manual_seed(3)
    return torch.nn.Sequential(torch.nn.Linear(5, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))


@pytest.mark.parametrize("make", [
    lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9, weight_decay=0.01),
    lambda ps: torch.optim.Adam(ps, lr=0.01),
    lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1),
    lambda ps: torch.optim.RMSprop(ps, lr=0.01, momentum=0.5),
])
def test_one_parameter_at_a_time_equals_the_whole_step(make):
    whole, each = _net(), _net()
    opt_w, opt_e = make(whole.parameters()), make(each.parameters())
    upd = pp.PerParameterUpdates(type(opt_e), opt_e, list(each.parameters()))
    gen = torch.Generator().manual_seed(5)
    for step in range(4):
        if step == 2:  # an LR schedule changes the user's group: the updates follow it
            for o in (opt_w, opt_e):
                o.param_groups[0]["lr"] *= 0.5
        grads = [torch.randn(p.shape, generator=gen) for p in whole.parameters()]
        for p, g in zip(whole.parameters(), grads, strict=True):
            p.grad = g.clone()
        opt_w.step()
        # the means arrive in another order than the parameters are listed
        for p, g in reversed(list(zip(each.parameters(), grads, strict=True))):
            upd.apply(p, g.clone())
            assert p.grad is None  # left as it was
    for a, b in zip(whole.parameters(), each.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    # one state, the user optimizer's: its state_dict has every parameter's
    assert len(opt_e.state_dict()["state"]) == len(list(each.parameters()))


def test_optimizers_that_may_couple_parameters_are_refused():
    net = _net()
    lbfgs = torch.optim.LBFGS(net.parameters())
    assert not pp.separable(torch.optim.LBFGS)

    class MySGD(torch.optim.SGD):
        pass

    assert not pp.separable(MySGD)  # a subclass may change step
    assert pp.separable(torch.optim.Adam)
    with pytest.raises(ValueError, match="LBFGS may couple parameters"):
        pp.PerParameterUpdates(torch.optim.LBFGS, lbfgs, list(net.parameters()))
