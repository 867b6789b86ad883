"""test_oktopk: Ok-Topk's sparse path ([push] mode = sparse) from PyTorch,
DistributedOptimizer(compression=ordo.torch.Compression.oktopk(density)): a run of 2 workers
equals, at every step, a numpy replay of every rule of the path (oktopk_ref.py: the workers'
top-k with residuals and threshold reuse, the servers' global selection and SGD); and the
settings that cannot run it are refused with the reason."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")
np = pytest.importorskip("numpy")

import oktopk_ref  # noqa: E402
import ordo  # noqa: E402
import ordo.torch as hvd  # noqa: E402
import torch_mlp  # noqa: E402
from ordo.torch import optimizer as opt_mod  # noqa: E402
from ordo.torch import runtime as rt  # noqa: E402
from torch_cluster import SRC, Cluster  # noqa: E402

WORKER = SRC / "tests" / "python" / "torch_oktopk_worker.py"
DENSITY = 0.25
LR, MOMENTUM, WD = 0.05, 0.9, 0.01  # torch_mlp.optimizer("server")


def _replay(servers: int, period: int) -> tuple[np.ndarray, oktopk_ref.OkTopk]:
    """_replay trains torch_mlp as the run does, the sparse path replayed in numpy: returns
    the parameters after every step (one row each) and the replay."""
    net = torch_mlp.model()
    params = list(net.parameters())
    flat = torch.nn.utils.parameters_to_vector(params).detach().numpy()
    ref = oktopk_ref.OkTopk(flat, 2, servers, DENSITY, period, LR, MOMENTUM, WD)
    xs, ys = torch_mlp.data()
    part = torch_mlp.BATCH // 2
    rows = []
    for t in range(torch_mlp.ITERS):
        grads = []
        for r in range(2):
            torch.nn.utils.vector_to_parameters(torch.from_numpy(ref.w.copy()), params)
            net.zero_grad()
            x, y = xs[t, r * part:(r + 1) * part], ys[t, r * part:(r + 1) * part]
            torch.nn.functional.mse_loss(net(x), y).backward()
            grads.append(torch.cat([p.grad.flatten() for p in params]).numpy().copy())
        ref.step(grads)
        rows.append(ref.w.copy())
    return np.stack(rows), ref


@pytest.mark.parametrize("servers,period,density", [(2, 1, "0.25"), (2, 3, "conf"),
                                                    (1, 4, "0.25")])
def test_oktopk_run_equals_the_numpy_replay(tmp_path: Path, servers: int, period: int,
                                            density: str):
    """Every worker's parameters after every step equal the replay's within float32 rounding
    (1e-6 relative; no entry beyond it), on exact iterations only (period 1) and with the
    workers' and servers' thresholds reused in between (3, 4), over 1 and 2 servers."""
    path = tmp_path / "oktopk.ini"
    path.write_text(f"[cluster]\nservers = {servers}\nworkers = 2\n\n[model]\n"
                    "trainer = declared\n\n[push]\nmode = sparse\n"
                    f"density = {DENSITY}\nthreshold_period = {period}\n"
                    "repartition_period = 1000\n\n[fault]\ntimeout_ms = 30000\n")
    c = Cluster(tmp_path, conf=path, servers=servers)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(WORKER), str(tmp_path / f"w{r}.pt"),
                               density])
        names = ["worker0", "worker1", *[f"server{s}" for s in range(servers)], "scheduler"]
        for name in names:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    want, ref = _replay(servers, period)
    n, k = ref.n, ref.k
    # the path was sparse: the servers changed about k of n entries a step, not all
    assert ref.selected < 0.5 * n * torch_mlp.ITERS, (ref.selected, n)
    if period > 1:  # thresholds were reused, and a reused one was cut to k at least once
        assert sum(w.reused for w in ref.workers) > 0
        assert sum(w.trimmed for w in ref.workers) > 0
    for s in range(servers):
        assert f"sparse: {torch_mlp.ITERS} iterations:" in c.log(f"server{s}"), \
            c.log(f"server{s}")
    for r in range(2):
        got = torch.load(tmp_path / f"w{r}.pt", weights_only=True).numpy()
        assert got.shape == want.shape == (torch_mlp.ITERS, n)
        rel = np.abs(got - want) / np.maximum(np.abs(want), 1e-30)
        bad = np.argwhere(rel > 1e-6)
        assert len(bad) == 0, (f"worker {r}: {len(bad)} of {got.size} values differ from the "
                               f"replay beyond 1e-6 relative, the first at step {bad[0][0]} "
                               f"entry {bad[0][1]}: {got[tuple(bad[0])]} against "
                               f"{want[tuple(bad[0])]} (k = {k} of {n})")
    # and the replay is not dense SGD: leaving the selection out changes the values
    dense, _ = _replay_dense()
    assert np.abs(dense[-1] - want[-1]).max() > 1e-3


def test_a_worker_whose_conf_alone_says_sparse_is_refused_at_the_join(tmp_path: Path):
    """The plan is the scheduler's: a worker whose own conf says [push] mode = sparse (here
    from init()'s settings) while the scheduler's does not would push dense without a word;
    its join fails naming both."""
    path = tmp_path / "dense.ini"
    path.write_text("[cluster]\nservers = 1\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    "[fault]\ntimeout_ms = 30000\n")
    c = Cluster(tmp_path, conf=path, servers=1)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(WORKER), str(tmp_path / f"w{r}.pt"),
                               str(DENSITY), "SPARSE"])
        codes = [c.finish(f"worker{r}") for r in range(2)]
    finally:
        c.stop()
    for r in range(2):
        assert codes[r] != 0
        assert "this worker's conf has push.mode = sparse, but the scheduler's plan has no " \
            "sparse path" in c.log(f"worker{r}"), c.log(f"worker{r}")


def _replay_dense() -> tuple[np.ndarray, None]:
    """the same training with every entry selected every step (density 1: dense SGD)"""
    net = torch_mlp.model()
    opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM, weight_decay=WD)
    xs, ys = torch_mlp.data()
    rows = []
    for t in range(torch_mlp.ITERS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(xs[t]), ys[t]).backward()
        opt.step()
        rows.append(torch.nn.utils.parameters_to_vector(net.parameters()).detach().numpy())
    return np.stack(rows), None


def _runtime(**settings: str) -> rt.Runtime:
    return rt.Runtime(ordo.Client(), None, dict(settings))


@pytest.mark.parametrize("density", [0, -0.1, 1.5, True, "0.1", float("nan")])
def test_a_bad_density_is_refused(density):
    with pytest.raises(ValueError, match=r"Compression.oktopk: density=.*a fraction of the "
                                         r"model in \(0, 1\] \(push.density\)"):
        hvd.Compression.oktopk(density)


def test_a_bad_density_in_a_spec_string_is_refused():
    r = _runtime(**{"push.mode": "sparse"})
    for spec in ["oktopk:0", "oktopk:2", "oktopk:x"]:
        with pytest.raises(ValueError, match=rf"compression='{spec}': the density after "
                                             r"'oktopk:' is a fraction"):
            opt_mod.horovod_options(r, "server", spec, None, 1.0, 0, None, None)
    r.client.close()


def test_oktopk_needs_server_mode_and_the_sparse_conf():
    r = _runtime(**{"push.mode": "sparse", "push.density": "0.05"})
    args = (None, 1.0, 0, None, None)
    with pytest.raises(ValueError, match=r"Compression.oktopk needs mode='server'"):
        opt_mod.horovod_options(r, "gradients", hvd.Compression.oktopk(), *args)
    with pytest.raises(ValueError, match=r"Compression.oktopk\(0.1\) but the run's conf has "
                                         r"push.density = 0.05"):
        opt_mod.horovod_options(r, "server", hvd.Compression.oktopk(0.1), *args)
    assert opt_mod.horovod_options(r, "server", hvd.Compression.oktopk(0.05), *args).codec \
        == "none"  # the path compresses; the tensors are declared plain
    with pytest.raises(ValueError, match=r"compression='bf16' with the conf's \[push\] mode = "
                                         r"sparse"):
        opt_mod.horovod_options(r, "server", hvd.Compression.bf16, *args)
    net = torch_mlp.model()
    with pytest.raises(ValueError, match=r"\[push\] mode = sparse \(Compression.oktopk\) needs "
                                         r"mode='server'"):
        opt_mod.make(torch.optim.SGD(net.parameters(), lr=0.1), r, net.named_parameters(),
                     "gradients", 1, None)
    r.client.close()
    dense = _runtime()
    with pytest.raises(ValueError, match=r"Compression.oktopk needs \[push\] mode = sparse in "
                                         r"the run's conf"):
        opt_mod.horovod_options(dense, "server", hvd.Compression.oktopk(), *args)
    dense.client.close()


def test_the_ddp_hook_refuses_oktopk():
    with pytest.raises(ValueError, match=r"ddp_comm_hook: Compression.oktopk is the sparse path "
                                         r"of DistributedOptimizer\(mode='server'\)"):
        hvd.ddp_comm_hook(hvd.Compression.oktopk(), None)
