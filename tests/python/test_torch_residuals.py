"""test_torch_residuals: error-feedback residuals in ordo.torch's checkpoints (docs/torch.md,
"Checkpoints with error feedback"). Two workers train torch_mlp's model in gradients mode with
Compression.topk(0.1) for 8 steps and save each rank's state_dict; a fresh cluster (new
processes) loads them and trains steps 8 .. 15. The parameters equal those of an
uninterrupted 16-step run bit for bit; the same resume with the residuals left out differs.
Residuals of another codec, of other parameters or of another rank are not loaded (the first
two refused naming what differs, the third with a warning), and a load after this worker's
first push is refused; a state_dict taken after shutdown() holds none, with a warning."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")

import ordo.torch as hvd  # noqa: E402
import torch_mlp  # noqa: E402
from torch_cluster import SRC, Cluster  # noqa: E402

WORKER = SRC / "tests" / "python" / "torch_residuals_worker.py"
STEPS, CUT = 16, 8


def run(tmp: Path, name: str, src: str, first: int, last: int, how: str) -> list[str]:
    """run trains steps first .. last - 1 on a fresh cluster of 2 workers (how: fresh, resume,
    zeros; torch_residuals_worker.py) into tmp/name, and returns the workers' logs."""
    out = tmp / name
    out.mkdir()
    conf = tmp / f"{name}.ini"
    conf.write_text("[cluster]\nservers = 2\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    "[fault]\ntimeout_ms = 5000\n")
    c = Cluster(out, conf=conf, servers=2)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(WORKER), str(tmp / src), str(out),
                               str(first), str(last), how])
        for proc in ["worker0", "worker1", "server0", "server1", "scheduler"]:
            assert c.finish(proc) == 0, f"{name} {proc}: {c.log(proc)}"
    finally:
        c.stop()
    return [c.log(f"worker{r}") for r in range(2)]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("residuals")
    run(tmp, "whole", "-", 0, STEPS, "fresh")
    logs = run(tmp, "first", "-", 0, CUT, "fresh")
    for r, log in enumerate(logs):
        # 2 weights of 16 x 8 and 4 x 16 and 2 biases, and the join flag (no codec, no
        # residual), one slice each: a header, 5 sizes, 212 floats and the trailer
        assert f"rank {r}: residuals of rank {r}, {16 + 5 * 8 + 212 * 4 + 16} bytes" in log, log
        assert "after shutdown: residuals False, ['ordo.torch: optimizer.state_dict() after " \
               "shutdown() holds no error-feedback residuals" in log, log
    return tmp


def params(tmp: Path, name: str, rank: int) -> dict:
    return torch.load(tmp / name / f"params-{rank}.pt")


def test_a_resumed_run_goes_on_exactly_with_its_residuals_and_not_without(runs: Path):
    logs = run(runs, "resumed", "first", CUT, STEPS, "resume")
    for log in logs:
        assert "a second load: ordo.torch: load_state_dict: ordo_load_state: " \
               "state['ordo_residuals']: error-" \
               "feedback residuals are loaded before the first push, and this worker pushed " \
               "already" in log, log
    run(runs, "zeros", "first", CUT, STEPS, "zeros")
    for r in range(2):
        want, got, zeros = (params(runs, n, r) for n in ("whole", "resumed", "zeros"))
        for k, v in want.items():
            assert torch.equal(got[k], v), f"rank {r} {k}: {(got[k] - v).abs().max()}"
        worst = max(float((zeros[k] - v).abs().max()) for k, v in want.items())
        assert worst > 1e-4, f"rank {r}: the resume without residuals differs by only {worst}"


@pytest.fixture
def runtime_reset():
    yield
    hvd.shutdown()


def optimizer(net: torch.nn.Module, codec: hvd.Compressor, rank: int = 0):
    hvd.init(settings={"cluster.scheduler": "tcp://127.0.0.1:1", "cluster.rank": str(rank)})
    return hvd.DistributedOptimizer(torch_mlp.optimizer("gradients", net.parameters()),
                                    named_parameters=net.named_parameters(), compression=codec)


def test_residuals_of_another_codec_or_model_are_refused_naming_it(runs: Path, runtime_reset):
    state = torch.load(runs / "first" / "ckpt-0.pt")["optimizer"]
    opt = optimizer(torch_mlp.model(), hvd.Compression.onebit)
    with pytest.raises(ValueError, match=r"residuals are of compression 'topk:0.1', this run's "
                                         r"is 'onebit' \(drop state\['ordo_residuals'\]"):
        opt.load_state_dict(state)
    hvd.shutdown()
    wide = torch.nn.Sequential(torch.nn.Linear(8, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    opt = optimizer(wide, hvd.Compression.topk(0.1))
    state["param_groups"] = opt.state_dict()["param_groups"]
    state["state"] = {}
    with pytest.raises(ValueError, match="the residuals' parameter 0 is '0.weight' of 128 "
                                         "values, this optimizer's is '0.weight' of 256"):
        opt.load_state_dict(state)


def test_another_ranks_residuals_are_left_out_with_a_warning(runs: Path, runtime_reset):
    state = torch.load(runs / "first" / "ckpt-0.pt")["optimizer"]
    opt = optimizer(torch_mlp.model(), hvd.Compression.topk(0.1), rank=1)
    with pytest.warns(UserWarning, match="holds rank 0's error-feedback residuals; rank 1 "
                                         "keeps its own"):
        opt.load_state_dict(state)
    assert "ordo_residuals" not in opt.state_dict()  # nothing pending, not joined
