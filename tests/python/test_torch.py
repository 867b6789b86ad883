"""test_torch: ordo.torch (python/ordo/torch) against real clusters of the C daemons on loopback.

The equivalence tests train torch_mlp's model on 2 workers through DistributedOptimizer and
compare the parameters with one process training on the whole batches. Needs torch (skipped
without it) and a libordo with declared tensors, per-tensor updates and broadcasts.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")

import ordo  # noqa: E402
import ordo.torch as hvd  # noqa: E402
import torch_mlp  # noqa: E402
from torch_cluster import SRC, Cluster  # noqa: E402

WORKER = SRC / "tests" / "python" / "torch_worker.py"


def _c_side_missing() -> str | None:
    """The reason the cluster tests cannot run with this libordo, or None."""
    c = ordo.Client()
    try:
        c.declare_update(c.declare("w", 1), "average")
    except ordo.OrdoError as e:
        return f"libordo cannot run per-tensor updates yet ({e})"
    finally:
        c.close()
    return None


def conf(tmp: Path, servers: int = 2, push: str = "dense") -> Path:
    path = tmp / "torch.ini"
    path.write_text(f"[cluster]\nservers = {servers}\nworkers = 2\n\n[model]\ntrainer = declared\n"
                    f"\n[push]\nmode = {push}\n\n[fault]\ntimeout_ms = 5000\n")
    return path


@pytest.fixture
def runtime_reset():
    yield
    hvd.shutdown()


@pytest.mark.parametrize("device,plan,push", [("cpu", "", "dense"), ("cuda", "", "dense"),
                                              ("cpu", "plan", "dense"), ("cpu", "", "merged")])
@pytest.mark.parametrize("mode", ["gradients", "server"])
def test_two_workers_equal_one_process_on_the_whole_batch(tmp_path: Path, mode: str,
                                                           device: str, plan: str, push: str):
    """With plan, the model= seam (fake_plan's stand-ins): priorities from the plan, and in
    server mode each module's forward waits for its own parameters; the values stay equal.
    Merged: the parameters travel in merge groups, the program's own tensor ("check", pushed
    once at the end) alone; without that its group would never fill and the run would hang."""
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("no GPU: the staging of CUDA tensors through host memory is not tested")
    missing = _c_side_missing()
    if missing:
        pytest.skip(missing)
    c = Cluster(tmp_path, conf=conf(tmp_path, push=push), servers=2)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(WORKER), mode, str(tmp_path / f"out{r}.pt"),
                               device, plan])
        for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    if push == "merged":
        assert "so that occasional tensors travel alone" in c.log("scheduler"), \
            c.log("scheduler")
    for r in range(2):
        log = c.log(f"worker{r}")
        assert "push_pull: mean 1.5, sum 3.0" in log, log
        if mode == "server":
            assert "lr change: ordo.torch: mode='server': '0.weight''s (lr, momentum, " \
                   "weight_decay) changed from (0.05, 0.9, 0.01) to (0.1, 0.9, 0.01)" in log, log
        if plan:
            gated = "gate waits" in log and " 0 gate waits" not in log
            # fake_plan reverses the tensors' order; in gradients mode the optimizer's join
            # flag (ordo.torch.join) comes after the parameters
            want = "[4, 3, 2, 1]" if mode == "gradients" else "[3, 2, 1, 0]"
            assert f"plan: replan {r == 0}" in log and f"priorities {want}" in log, log
            assert gated, log  # gradients mode: per-parameter updates (Adam) are gated too
    # every step was reported (ordo_step): the run's summary has its iterations and step times,
    # and with model= the samples of each step (the batch of the model's forward)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["iterations"] == torch_mlp.ITERS, summary
    assert summary["step_ms"]["p50"] > 0 and summary["wait_ms"]["p50"] >= 0, summary
    assert (summary["throughput_samples_per_s"] > 0) == bool(plan), summary
    torch.set_num_threads(1)
    net = torch_mlp.model()
    torch_mlp.train(net, torch_mlp.optimizer(mode, net.parameters()), 0, 1)
    want = net.state_dict()
    for r in range(2):
        got = torch.load(tmp_path / f"out{r}.pt")
        for k, v in want.items():
            # 1e-5 relative; 1e-7 absolute for values near 0 (float32 rounding: the servers
            # average the workers' half-batch means, one process takes the whole batch's)
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-7, msg=f"rank {r} {k}")
        assert not torch.equal(got["0.weight"], torch_mlp.model().state_dict()["0.weight"])


def test_a_float64_parameter_is_refused_naming_it(runtime_reset):
    hvd.init(settings={"cluster.scheduler": "tcp://127.0.0.1:1"})
    net = torch_mlp.model().double()
    with pytest.raises(TypeError, match=r"parameter '0.weight' has dtype torch.float64"):
        hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                 named_parameters=net.named_parameters())


def test_a_parameter_missing_from_named_parameters_is_refused(runtime_reset):
    hvd.init(settings={"cluster.scheduler": "tcp://127.0.0.1:1"})
    net = torch_mlp.model()
    named = [(n, p) for n, p in net.named_parameters() if n != "2.bias"]
    with pytest.raises(ValueError, match="1 parameter.*not in named_parameters"):
        hvd.DistributedOptimizer(torch.optim.Adam(net.parameters()), named_parameters=named)


def test_server_mode_refuses_what_the_servers_cannot_run(runtime_reset):
    hvd.init(settings={"cluster.scheduler": "tcp://127.0.0.1:1"})
    net = torch_mlp.model()
    with pytest.raises(ValueError, match="Adam cannot run there"):
        hvd.DistributedOptimizer(torch.optim.Adam(net.parameters()),
                                 named_parameters=net.named_parameters(), mode="server")
    nesterov = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9, nesterov=True)
    with pytest.raises(ValueError, match="nesterov=True"):
        hvd.DistributedOptimizer(nesterov, named_parameters=net.named_parameters(),
                                 mode="server")
    with pytest.raises(ValueError, match="mode='fast'"):
        hvd.DistributedOptimizer(nesterov, named_parameters=net.named_parameters(), mode="fast")


def test_init_without_a_cluster_is_an_error_not_a_hang(runtime_reset, monkeypatch):
    monkeypatch.delenv("ORDO_CONF", raising=False)
    monkeypatch.delenv("ORDO_CLUSTER_SCHEDULER", raising=False)
    with pytest.raises(RuntimeError, match=r"no cluster to join.*ordo-launch"):
        hvd.init()
    missing = _c_side_missing()
    if missing:
        pytest.skip(missing)
    hvd.init(settings={"cluster.scheduler": "tcp://127.0.0.1:1", "fault.startup_ms": 300,
                       "model.trainer": "declared"})
    net = torch_mlp.model()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(net.parameters(), lr=0.1),
                                   named_parameters=net.named_parameters())
    assert hvd.size() == 1 and hvd.local_rank() == 0 and hvd.local_size() == 1
    started = time.monotonic()
    with pytest.raises(ordo.OrdoError, match="tcp://127.0.0.1:1"):  # TIMEDOUT or PEERDEAD
        torch.nn.functional.mse_loss(net(torch.zeros(2, 8)), torch.zeros(2, 4)).backward()
        opt.step()
    assert time.monotonic() - started < 10


def test_rank_and_size_before_the_join_are_the_launchers(runtime_reset, monkeypatch,
                                                          tmp_path: Path):
    c = tmp_path / "w.ini"
    c.write_text("[cluster]\nworkers = 3 ; three\n\n[model]\ntrainer = declared\n")
    monkeypatch.setenv("ORDO_CONF", str(c))
    monkeypatch.setenv("ORDO_CLUSTER_SCHEDULER", "tcp://127.0.0.1:1")
    monkeypatch.delenv("ORDO_CLUSTER_RANK", raising=False)
    monkeypatch.delenv("ORDO_CLUSTER_WORKERS", raising=False)
    hvd.init()
    assert hvd.size() == 3
    with pytest.raises(RuntimeError, match="assigned no rank"):
        hvd.rank()
    monkeypatch.setenv("ORDO_CLUSTER_RANK", "2")
    assert hvd.rank() == 2
    net = torch_mlp.model()
    started = time.monotonic()
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)  # nothing declared: at the join
    # no join was tried (it would wait fault.startup_ms, 60 s): a bound a slow machine keeps
    assert time.monotonic() - started < 10


def test_a_tensor_declared_after_the_join_is_refused():
    r = hvd.runtime.Runtime(ordo.Client(), None, {})
    r.declare("w", 4)
    r.joined = True  # as after the first transfer
    with pytest.raises(RuntimeError, match="'late' declared after the cluster was joined"):
        r.declare("late", 4)
    with pytest.raises(ValueError, match="declared twice"):
        r.declare("w", 5)
    r.client.close()


def test_sparse_pushes_train_from_pytorch(tmp_path: Path):
    """push.mode = sparse from PyTorch: the sparse servers run the SGD the workers declared
    (server mode), and the loss on the whole data goes down."""
    missing = _c_side_missing()
    if missing:
        pytest.skip(missing)
    path = tmp_path / "sparse.ini"
    path.write_text("[cluster]\nservers = 2\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    "[push]\nmode = sparse\ndensity = 0.25\n\n[fault]\ntimeout_ms = 5000\n")
    c = Cluster(tmp_path, conf=path, servers=2)
    worker = SRC / "tests" / "python" / "torch_sparse_worker.py"
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(worker)])
        for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    for r in range(2):
        log = c.log(f"worker{r}")
        line = [x for x in log.splitlines() if "torch_sparse_worker: loss" in x]
        assert line, log
        before, after = (float(v) for v in line[0].split("loss ")[1].split(" -> "))
        assert after < 0.9 * before, line[0]
    for s in range(2):  # torch_mlp's SGD, not the conf's [optimizer] (lr 0.01, no momentum)
        assert "sparse: sgd lr 0.05, momentum 0.9, weight decay 0.01" in c.log(f"server{s}"), \
            c.log(f"server{s}")


@pytest.mark.parametrize("mode", ["gradients", "server"])
def test_strict_order_with_a_tensor_transferred_once(tmp_path: Path, mode: str):
    """[order] enforce = strict with a planned policy: a declared tensor that is not
    transferred every step (first in the plan) holds no step back (it used to hang)."""
    missing = _c_side_missing()
    if missing:
        pytest.skip(missing)
    path = conf(tmp_path)
    path.write_text(path.read_text() + "\n[order]\npolicy = tao\nenforce = strict\n")
    c = Cluster(tmp_path, conf=path, servers=2)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(SRC / "tests" / "python" / "strict_worker.py"),
                               mode])
        for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    for r in range(2):
        assert "strict: 12 steps, counts [3.0, 2.0]" in c.log(f"worker{r}"), c.log(f"worker{r}")
    assert "replan 1: planned from worker 0's profile" in c.log("scheduler")
