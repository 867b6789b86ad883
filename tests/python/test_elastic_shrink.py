"""test_elastic_shrink: [fault] worker = shrink with PyTorch workers (declared tensors). Three
workers read one epoch through ElasticSampler (the batch service); worker 1 is SIGKILLed while
it holds a batch. The run must end (exit 0) with the two workers left, every sample of the
epoch trained on exactly once (the dead worker's leased batch handed out again), and the
survivors' parameters equal to each other and to a single-process replay of the logged
batches in which each step's update is the mean over the workers that pushed in it (server
mode: the servers' SGD; gradients mode: the workers' Adam on the servers' mean)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from cluster import BIN, SRC, worker_env  # noqa: E402

WORKER = SRC / "tests" / "python" / "epoch_worker.py"
KILL_AT = 2


def launch(tmp: Path, name: str, mode: str) -> tuple[int, str]:
    out = tmp / name
    out.mkdir()
    conf = tmp / f"{name}.ini"
    conf.write_text("[cluster]\nservers = 2\nworkers = 3\n\n[model]\ntrainer = declared\n\n"
                    "[sync]\nbatches = on\n\n"
                    f"[worker]\ncommand = {sys.executable} {WORKER} {out}\n\n"
                    "[fault]\nworker = shrink\ntimeout_ms = 2000\n")
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join([str(SRC / "tests" / "python"), env["PYTHONPATH"]])
    env["MODE"] = mode
    env["KILL_AT"] = str(KILL_AT)
    env["OMP_NUM_THREADS"] = "1"
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), str(conf), "--bin", str(BIN),
                        f"--output.dir={tmp}", f"--output.run=run-{name}"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    return p.returncode, p.stdout


def read_batches(out: Path) -> tuple[dict[int, list[tuple[int, list[int]]]], list[int]]:
    """read_batches reads the workers' OUT/batches-RANK.txt (epoch_worker.py): per step the
    (rank, indices) that trained it, and every index trained, in file order."""
    steps: dict[int, list[tuple[int, list[int]]]] = defaultdict(list)
    seen: list[int] = []
    for f in sorted(out.glob("batches-*.txt")):
        for line in f.read_text().splitlines():
            t, r, *idx = (int(v) for v in line.split())
            steps[t].append((r, idx))
            seen.extend(idx)
    return steps, seen


def replay(mode: str, steps: dict[int, list[tuple[int, list[int]]]], n: int = 240) -> dict:
    """replay trains the model in one process: step t's gradient is the mean of the logged
    workers' batch gradients of step t."""
    sys.path.insert(0, str(SRC / "tests" / "python"))
    import epoch_worker
    import torch_mlp
    xs, ys = epoch_worker.dataset(n).tensors
    net = torch_mlp.model()
    opt = torch_mlp.optimizer(mode, net.parameters())
    params = list(net.parameters())
    for t in sorted(steps):
        grads = []
        for _, idx in sorted(steps[t]):
            net.zero_grad()
            torch.nn.functional.mse_loss(net(xs[idx]), ys[idx]).backward()
            grads.append([p.grad.clone() for p in params])
        for i, p in enumerate(params):
            p.grad = sum(g[i] for g in grads) / len(grads)
        opt.step()
    return net.state_dict()


@pytest.mark.parametrize("mode", ["server", "gradients"])
def test_a_killed_worker_leaves_and_the_others_finish_the_epoch(tmp_path: Path, mode: str):
    rc, log = launch(tmp_path, mode, mode)
    assert rc == 0, log
    assert "the run goes on without it (fault.worker = shrink)" in log, log
    assert "the run goes on with 2 workers" in log, log
    out = tmp_path / mode
    steps, seen = read_batches(out)
    # the dead worker trained steps 0 .. KILL_AT - 1; its batch of KILL_AT went to another
    assert sorted(r for r, _ in steps[KILL_AT - 1]) == [0, 1, 2], steps[KILL_AT - 1]
    assert sorted(r for r, _ in steps[KILL_AT]) == [0, 2], steps[KILL_AT]
    assert sorted(seen) == list(range(240)), "not every sample once: " + \
        f"{len(seen)} trained, {len(set(seen))} different"
    summary = json.loads((tmp_path / f"run-{mode}" / "summary.json").read_text())
    assert summary["samples"] == 240, summary.get("samples")
    assert summary["membership"]["shrinks"] == 1, summary["membership"]
    assert summary["membership"]["workers_left"] == 2, summary["membership"]
    assert not (out / "params-1.pt").exists()
    p0, p2 = torch.load(out / "params-0.pt"), torch.load(out / "params-2.pt")
    want = replay(mode, steps)
    for k, v in want.items():
        torch.testing.assert_close(p2[k], p0[k], rtol=0, atol=0, msg=f"survivors differ in {k}")
        torch.testing.assert_close(p0[k], v, rtol=1e-5, atol=1e-6, msg=f"{k} against the replay")
