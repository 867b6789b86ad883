"""test_profile: ordo.torch.profile (ModelProfiler, export_profile, ForwardGate) on small
models: the profiles load in ordo-plan, list exactly the named parameters, keep the forward
order and carry measured times; a model torch.fx cannot trace falls back to hooks; the gate
waits for each module's own tensors before the module runs. Skips without torch.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from cluster import BIN  # noqa: E402
from ordo.torch.profile import ForwardGate, ModelProfiler, export_profile  # noqa: E402
from torch import nn  # noqa: E402


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(16 * 7 * 7, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        return self.fc(torch.flatten(x, 1))


def mlp() -> nn.Module:
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(),
                         nn.Linear(64, 4))


class Branchy(nn.Module):
    """Branchy's forward depends on its data: torch.fx cannot trace it."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(16, 16)
        self.b = nn.Linear(16, 16)
        self.scale = nn.Parameter(torch.ones(16))  # used by the model's own code

    def forward(self, x):
        x = self.a(x)
        if x.sum() > 0:
            x = torch.relu(x)
        return self.b(x) * self.scale


class TwoBranches(nn.Module):
    """TwoBranches runs p and q on the input, then r on both, behind a data-dependent branch."""

    def __init__(self):
        super().__init__()
        self.p = nn.Linear(8, 8)
        self.q = nn.Linear(8, 8)
        self.r = nn.Linear(16, 4)

    def forward(self, x):
        a, b = self.p(x), self.q(x)
        if a.sum() > b.sum():
            a = torch.relu(a)
        return self.r(torch.cat([a, b], 1))


def plan_order(path: Path) -> dict:
    out = subprocess.run([str(BIN / "ordo-plan"), "order", "--policy", "tao", str(path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def check_profile(model: nn.Module, text: str, path: Path, forward: list[str]) -> dict:
    prof = json.loads(text)
    named = dict(model.named_parameters())
    assert [p["name"] for p in prof["params"]] == list(named)
    assert [p["shape"] for p in prof["params"]] == [list(t.shape) for t in named.values()]
    names = [op["name"] for op in prof["ops"]]
    assert [n for n in names if n in forward] == forward  # forward order
    for op in prof["ops"]:
        assert op["fwd_us"] >= 0 and op["bwd_us"] >= 0
        if op["params"] and op["name"] in forward:
            assert op["fwd_us"] > 0, op
    assert sum(op["bwd_us"] for op in prof["ops"]) > 0
    assert {n for op in prof["ops"] for n in op["params"]} == set(named)
    order = plan_order(path)
    assert sorted(p["param"] for p in order["priorities"]) == sorted(named)
    return prof


def test_cnn_profile_from_fx_loads_in_ordo_plan(tmp_path: Path):
    model = CNN()
    path = tmp_path / "cnn.json"
    text = export_profile(model, torch.randn(4, 1, 28, 28), str(path), iterations=3)
    prof = check_profile(model, text, path, ["conv1", "pool", "conv2", "pool#1", "fc"])
    ops = {op["name"]: op for op in prof["ops"]}
    assert ops["conv1"]["params"] == ["conv1.weight", "conv1.bias"]
    assert ops["conv1"]["bwd_us"] > 0
    assert "conv2" in ops["fn:relu_1"]["inputs"]  # the fx graph's edges
    assert prof["batch"] == 4


def test_mlp_profile_from_fx(tmp_path: Path):
    model = mlp()
    path = tmp_path / "mlp.json"
    text = export_profile(model, torch.randn(8, 32), str(path))
    check_profile(model, text, path, ["0", "1", "2", "3", "4"])


def test_untraceable_model_falls_back_to_hooks(tmp_path: Path):
    model = Branchy()
    named = dict(model.named_parameters())
    prof = ModelProfiler(model, named, iterations=2).start()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for _ in range(3):
        opt.zero_grad()
        model(torch.randn(4, 16)).sum().backward()
        opt.step()
        prof.step_done()
    assert prof.ready() and not prof.traced
    path = tmp_path / "branchy.json"
    text = prof.to_json()
    path.write_text(text)
    p = check_profile(model, text, path, ["a", "b"])
    ops = {op["name"]: op for op in p["ops"]}
    assert ops["b"]["inputs"] == ["a"]  # the hooks' chain
    assert "scale" in ops["a"]["params"]  # the root's own parameter: the first op


def test_hooks_take_the_edges_from_the_autograd_graph(tmp_path: Path):
    model = TwoBranches()
    path = tmp_path / "two.json"
    text = export_profile(model, torch.randn(4, 8), str(path), iterations=2)
    p = check_profile(model, text, path, ["p", "q", "r"])
    ops = {op["name"]: op for op in p["ops"]}
    assert ops["p"]["inputs"] == [] and ops["q"]["inputs"] == []  # both read the input
    assert sorted(ops["r"]["inputs"]) == ["p", "q"]


def test_profile_params_are_the_named_parameters_given(tmp_path: Path):
    model = mlp()
    named = {f"t{i}": p for i, p in enumerate(model.parameters())}
    prof = ModelProfiler(model, named, iterations=1).start()
    for _ in range(2):
        model(torch.randn(2, 32)).sum().backward()
        prof.step_done()
    p = json.loads(prof.to_json())
    assert [x["name"] for x in p["params"]] == list(named)


def test_forward_gate_waits_for_each_modules_own_tensors_before_it_runs():
    model = CNN()
    tensor_of = {p: i for i, p in enumerate(model.parameters())}
    log: list = []
    gate = ForwardGate(model, tensor_of, lambda tensors: log.append(("wait", tensors)))
    for name, m in model.named_children():  # log when each module's own forward starts
        def forward(*args, _run=m.forward, _name=name):
            log.append(("ran", _name))
            return _run(*args)
        m.forward = forward
    model(torch.randn(1, 1, 28, 28))
    assert log == [("wait", [0, 1]), ("ran", "conv1"), ("ran", "pool"),
                   ("wait", [2, 3]), ("ran", "conv2"), ("ran", "pool"),
                   ("wait", [4, 5]), ("ran", "fc")]
    gate.remove()
    log.clear()
    model(torch.randn(1, 1, 28, 28))
    assert all(kind == "ran" for kind, _ in log)
