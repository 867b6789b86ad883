"""test_replan: Client.replan (ordo_replan) on a real cluster of the C daemons: two Python
workers, one server with traces. After a re-plan from a profile the priorities equal
`ordo-plan order --policy tao` on the same profile, and the server releases every iteration's
pull responses after the first in the new order although the workers request them in reverse;
bad profiles are refused on every worker, naming the problem, and the run goes on.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from cluster import BIN, CONF, SRC, Cluster, worker_env  # noqa: F401

WORKER = SRC / "tests" / "python" / "replan_worker.py"
SIZES = {"a": 65536, "b": 256, "c": 2560}
# a profile whose forward order (c, b, a) is the reverse of the declared order (a, b, c), its
# parameters listed in yet another order
PROFILE = {
    "format": "ordo-model/1", "name": "rev", "batch": 8,
    "params": [{"name": "c", "shape": [2560]}, {"name": "a", "shape": [256, 256]},
               {"name": "b", "shape": [256]}],
    "ops": [{"name": "op_c", "inputs": [], "params": ["c"], "fwd_us": 300, "bwd_us": 600},
            {"name": "op_b", "inputs": ["op_c"], "params": ["b"], "fwd_us": 200, "bwd_us": 400},
            {"name": "op_a", "inputs": ["op_b"], "params": ["a"], "fwd_us": 100,
             "bwd_us": 200}],
}
# strict: the servers' releases show the plan's order although the workers request in reverse
ARGS = ["--cluster.servers=1", "--order.policy=tao", "--order.enforce=strict",
        "--order.plan_bandwidth=1gbit", "--output.trace=true"]


@pytest.fixture
def cluster(tmp_path: Path):
    c = Cluster(tmp_path, *ARGS)
    yield c
    c.stop()


def run_workers(c: Cluster, profile: str | None, *extra: str) -> list[dict]:
    path = "-"
    if profile is not None:
        path = str(c.tmp / "profile.json")
        Path(path).write_text(profile)
    for i in range(2):
        c.start(f"worker{i}", sys.executable, str(WORKER), str(CONF), path,
                f"cluster.scheduler={c.endpoint}", *extra, env=worker_env())
    for name in ["worker0", "worker1", "server0", "scheduler"]:
        assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    outs = []
    for i in range(2):
        lines = [ln for ln in c.log(f"worker{i}").splitlines() if ln.startswith("replan: ")]
        assert lines, c.log(f"worker{i}")
        outs.append(json.loads(lines[0][len("replan: "):]))
    return outs


def planned(profile: dict, tmp: Path) -> list[int]:
    path = tmp / "offline.json"
    path.write_text(json.dumps(profile))
    out = subprocess.run([str(BIN / "ordo-plan"), "order", "--policy", "tao", "--bandwidth",
                          "1gbit", "--latency-us", "0", str(path)],
                         capture_output=True, text=True, check=True).stdout
    by_name = {p["param"]: p["priority"] for p in json.loads(out)["priorities"]}
    return [by_name[n] for n in SIZES]


def test_replan_matches_ordo_plan_and_servers_release_in_the_new_order(cluster, tmp_path):
    outs = run_workers(cluster, json.dumps(PROFILE))
    want = planned(PROFILE, tmp_path)
    assert want[2] < want[1] < want[0]  # c first: the profile's forward order
    for out in outs:
        assert out["after"] == want, out
        assert out["before"] != want, out  # the start-up plan followed the declared order
    trace = json.loads((cluster.tmp / "run" / "trace-server-0.json").read_text())
    rel = [e["args"] for e in trace["traceEvents"] if e.get("cat") == "release"]
    # the pulls after the re-plan's first round (which strict releases by priority without
    # waiting: the server's enforcement starts afresh with the new plan)
    after = [r for r in rel if r["iter"] >= 2]
    assert len(after) >= 2 * 3 * 2, rel
    for w in range(2):
        for it in {r["iter"] for r in after}:
            prios = [r["priority"] for r in after if r["worker"] == w and r["iter"] == it]
            assert prios == sorted(prios), (w, it, prios)  # requested in reverse, released in order
            assert prios and prios[0] == min(want), (w, it, prios)
    assert (cluster.tmp / "run" / "replan-1.json").exists()
    # the profile it planned from is kept, and ordo-plan replays the step model from it
    kept = cluster.tmp / "run" / "replan-1-profile.json"
    assert json.loads(kept.read_text()) == PROFILE
    sim = json.loads(subprocess.run(
        [str(BIN / "ordo-plan"), "simulate", "--policy", "tao", "--workers", "2", "--bandwidth",
         "1gbit", "--latency-us", "0", str(kept)], capture_output=True, text=True,
        check=True).stdout)
    assert abs(sim["step"]["compute_us"] - 1800) < 1e-6, sim
    # the re-plan's step model has the profile's compute (3 ops: 1.8 ms forward and backward)
    # and keeps the start-up's slices; the credit is tuned again (auto)
    step = json.loads((cluster.tmp / "run" / "replan-1.json").read_text())["step"]
    assert abs(step["compute_ms"] - 1.8) < 1e-9, step
    start = json.loads((cluster.tmp / "run" / "summary.json").read_text())
    assert start["order_step"]["slice_bytes"] == step["slice_bytes"], (start["order_step"], step)
    assert start["order_step"]["compute_ms"] == step["compute_ms"], start["order_step"]


def test_search_replans_under_the_step_model(tmp_path: Path):
    """With policy search the re-plan searches the order under the training step model from
    the better of TAO's and the listed order: replan-1.json's step_search says from which,
    its modelled step is no longer than either start's, and the plan's step is that order's."""
    args = [a for a in ARGS if not a.startswith("--order.policy")]
    c = Cluster(tmp_path, *args, "--order.policy=search", "--order.search_budget_ms=200")
    try:
        outs = run_workers(c, json.dumps(PROFILE))
    finally:
        c.stop()
    plan = json.loads((tmp_path / "run" / "replan-1.json").read_text())
    ss = plan["step_search"]
    assert ss["start"] in ("planned", "listed"), ss
    assert ss["evals"] > 0, ss
    assert ss["found_ms"] <= min(ss["planned_ms"], ss["listed_ms"]) + 1e-9, ss
    # the credit is tuned again for the order found: never a longer modelled step
    assert plan["step"]["predicted_step_ms"] <= ss["found_ms"] * (1 + 1e-9), (plan["step"], ss)
    by_name = dict(zip(plan["params"], plan["priorities"], strict=True))
    want = [by_name[n] for n in SIZES]
    for out in outs:
        assert sorted(out["after"]) == [0, 1, 2], out  # a total order
        assert out["after"] == want, (out, plan)


def bad(profile: dict, change) -> str:
    p = json.loads(json.dumps(profile))
    change(p)
    return json.dumps(p)


@pytest.mark.parametrize("text,reason", [
    ("{not json", "invalid JSON"),
    (bad(PROFILE, lambda p: (p["params"][1].update(name="z"),
                               p["ops"][2].update(params=["z"]))),
     "'z' is not one of the cluster's 3 tensors"),
    (bad(PROFILE, lambda p: p["params"][0].update(shape=[2561])),
     "'c' has 2561 elements, the cluster's tensor 2 has 2560"),
    (None, "worker 0 passed no profile"),
])
def test_a_bad_profile_is_refused_on_every_worker_and_the_run_goes_on(cluster, text, reason):
    outs = run_workers(cluster, text)
    for out in outs:
        assert "error" in out, out
        assert reason in out["error"], out
        assert out["after"] == out["before"], out  # the old plan stays


def test_merged_pushes_follow_the_new_merge_groups(tmp_path: Path):
    c = Cluster(tmp_path, *ARGS, "--push.mode=merged")
    try:
        outs = run_workers(c, json.dumps(PROFILE))
    finally:
        c.stop()
    want = planned(PROFILE, tmp_path)
    for i, out in enumerate(outs):
        assert out["after"] == want, out
        assert "replan: new plan applied (push path merged)" in c.log(f"worker{i}")
    plan = json.loads((tmp_path / "run" / "replan-1.json").read_text())
    groups = plan["merge"]["groups"]
    assert sorted(k for g in groups for k in g) == [0, 1, 2], plan["merge"]


def test_calibrated_merge_groups_refuse_replan(tmp_path: Path):
    # an emulated link, so that the start-up calibration measures a per-byte cost
    c = Cluster(tmp_path, *ARGS, "--push.mode=merged", "--push.calibrate=true",
                "--net.bandwidth=1gbit")
    try:
        outs = run_workers(c, json.dumps(PROFILE))
    finally:
        c.stop()
    for out in outs:
        assert out.get("code") == -14, out  # NOTSUP
        assert "[push] calibrate = true" in out["error"], out


def test_a_torch_models_profile_replans_the_cluster(cluster, tmp_path):
    torch = pytest.importorskip("torch")
    from ordo.torch.profile import ModelProfiler

    l1, l2 = torch.nn.Linear(256, 256), torch.nn.Linear(256, 10, bias=False)
    model = torch.nn.Sequential(l1, torch.nn.ReLU(), l2)
    named = {"c": l2.weight, "a": l1.weight, "b": l1.bias}  # the cluster's names and sizes
    prof = ModelProfiler(model, named, iterations=2).start()
    while not prof.ready():
        model(torch.randn(8, 256)).sum().backward()
        prof.step_done()
    text = prof.to_json()
    outs = run_workers(cluster, text)
    want = planned(json.loads(text), tmp_path)
    assert want[2] == 2  # l2's weight comes last
    for out in outs:
        assert out["after"] == want, out
