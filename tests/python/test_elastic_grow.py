"""test_elastic_grow: [fault] max_workers and ordo-launch --add-worker with PyTorch workers. Two
workers read one epoch through ElasticSampler; a third is added mid-run. It must join at an
iteration boundary with the servers' values (server mode) or a live peer's parameters and
optimizer state (gradients mode), take batches, and the run must end
(exit 0) with every sample trained on exactly once and the three workers' parameters equal to
each other and to a single-process replay in which each step's update is the mean over the
workers that pushed in it. And the bad input: max_workers below workers, --add-worker to a job
that cannot grow (and one grown to max_workers), a worker rank restarted fault.restarts times."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
from cluster import BIN, SRC, worker_env  # noqa: E402
from test_elastic_shrink import read_batches, replay  # noqa: E402

WORKER = SRC / "tests" / "python" / "epoch_worker.py"
LAUNCH = SRC / "scripts" / "ordo-launch"
WAIT_AT = 3
# the two workers report steps 0 to 2 and wait before step 3 until the third joined; it joins
# at step 5 (two past the newest reported), so 5 steps of 2 batches, then 7 of 3: 31 batches,
# the whole epoch with no batch beyond it (the service gives a worker still before the last
# step of a run a batch more: docs/stragglers.md)
N = 248


def env_for(mode: str, **extra: str) -> dict[str, str]:
    env = worker_env()
    env["PYTHONPATH"] = os.pathsep.join([str(SRC / "tests" / "python"), env["PYTHONPATH"]])
    env["MODE"] = mode
    env["OMP_NUM_THREADS"] = "1"
    env.update(extra)
    return env


def write_conf(tmp: Path, name: str, max_workers: int, extra: str = "") -> tuple[Path, Path]:
    out = tmp / name
    out.mkdir()
    conf = tmp / f"{name}.ini"
    conf.write_text("[cluster]\nservers = 2\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    "[sync]\nbatches = on\n\n"
                    f"[worker]\ncommand = {sys.executable} {WORKER} {out}\n\n"
                    f"[fault]\nmax_workers = {max_workers}\ntimeout_ms = 2000\n{extra}")
    return conf, out


def start(tmp: Path, name: str, conf: Path, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([str(LAUNCH), str(conf), "--bin", str(BIN), f"--output.dir={tmp}",
                             f"--output.run=run-{name}"], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def add_worker(run: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([str(LAUNCH), "--add-worker", str(run)], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)


def wait_for_step(out: Path, step: int, job: subprocess.Popen) -> None:
    """wait_for_step returns once worker 0 logged step - 1 (it then waits before step)."""
    deadline = time.monotonic() + 180
    log = out / "batches-0.txt"
    while time.monotonic() < deadline and job.poll() is None:
        if log.exists() and len(log.read_text().splitlines()) >= step:
            return
        time.sleep(0.1)
    raise AssertionError(f"worker 0 did not reach step {step}: {job.poll()}")


@pytest.mark.parametrize("mode", ["server", "gradients"])
def test_a_worker_added_mid_run_joins_and_the_epoch_is_shared(tmp_path: Path, mode: str):
    conf, out = write_conf(tmp_path, "grow", 3)
    env = env_for(mode, WAIT_AT=str(WAIT_AT), WAIT_FOR="3", SAMPLES=str(N))
    job = start(tmp_path, "grow", conf, env)
    try:
        wait_for_step(out, WAIT_AT, job)
        added = add_worker(tmp_path / "run-grow", env)
        # the job now has max_workers: a fourth is refused, naming the limit
        late = add_worker(tmp_path / "run-grow", env)
        log, _ = job.communicate(timeout=240)
    finally:
        if job.poll() is None:
            job.kill()
    assert job.returncode == 0, log
    assert added.returncode == 0, added.stdout
    assert "adding worker 2 to the job" in added.stdout, added.stdout
    assert late.returncode == 1 and "has fault.max_workers = 3 workers already" in late.stdout, \
        late.stdout
    assert "joins the run at iteration" in log, log
    if mode == "gradients":  # the parameters and Adam's state of a live peer
        assert "took a peer's state of iteration 5" in added.stdout, added.stdout
    steps, seen = read_batches(out)
    joined = min(t for t, b in steps.items() if any(r == 2 for r, _ in b))
    assert joined == WAIT_AT + 2, sorted(steps)  # two past the newest step reported
    for t, b in steps.items():  # every step: both workers, and the third from its join on
        assert sorted(r for r, _ in b) == ([0, 1, 2] if t >= joined else [0, 1]), (t, b)
    assert sorted(seen) == list(range(N)), \
        f"not every sample once: {len(seen)} trained, {len(set(seen))} different"
    summary = json.loads((tmp_path / "run-grow" / "summary.json").read_text())
    assert summary["samples"] == N, summary.get("samples")
    assert summary["membership"]["joins"] == 1, summary["membership"]
    assert summary["membership"]["workers_left"] == 3, summary["membership"]
    assert len(summary["batches"]) == 3 and summary["batches"][2] > 0, summary["batches"]
    p = [torch.load(out / f"params-{r}.pt") for r in range(3)]
    want = replay(mode, steps, N)
    for k, v in want.items():
        for r in (1, 2):
            torch.testing.assert_close(p[r][k], p[0][k], rtol=0, atol=0, msg=f"rank {r} {k}")
        torch.testing.assert_close(p[0][k], v, rtol=1e-5, atol=1e-6, msg=f"{k} against the replay")


def test_bad_input_gets_a_clear_error(tmp_path: Path):
    env = env_for("server")
    # max_workers below workers: a conf error at start (status 2), naming both keys
    conf, _ = write_conf(tmp_path, "below", 1)
    p = subprocess.run([str(LAUNCH), str(conf), "--bin", str(BIN), f"--output.dir={tmp_path}"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    assert p.returncode == 2, p.stdout
    assert "fault.max_workers (1) must be 0 (no growth) or at least cluster.workers (2)" \
        in p.stdout, p.stdout
    # growth under asp: a mode that cannot grow, refused at start
    conf, _ = write_conf(tmp_path, "asp", 3, extra="\n[sync]\nmode = asp\n")
    p = subprocess.run([str(LAUNCH), str(conf), "--bin", str(BIN), f"--output.dir={tmp_path}"],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    assert p.returncode == 2, p.stdout
    assert "fault.max_workers = 3 (growing the run beyond cluster.workers = 2) needs " \
           "sync.mode = bsp" in p.stdout, p.stdout
    # a job that cannot grow (max_workers not set), and a folder with no job
    run = tmp_path / "nogrow-run"
    run.mkdir()
    (run / "add-worker.env").write_text("add_workers=2\nadd_max=2\n")
    p = add_worker(run, env)
    assert p.returncode == 1 and "cannot grow: fault.max_workers is cluster.workers (2)" \
        in p.stdout, p.stdout
    p = add_worker(tmp_path / "nothing", env)
    assert p.returncode == 2 and "no run folder" in p.stdout, p.stdout
    # a worker killed more often than fault.restarts allows: the run stops, saying so
    conf, out = write_conf(tmp_path, "restarts", 0,
                           extra="worker = restart\nrestarts = 1\n")
    env_kill = env_for("server", KILL_AT="1")  # worker 1 dies in step 1 each time
    p = subprocess.run([str(LAUNCH), str(conf), "--bin", str(BIN), f"--output.dir={tmp_path}",
                        "--output.run=run-restarts"], env=env_kill, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=240)
    assert p.returncode != 0, p.stdout
    assert "starting it again (restart 1/1" in p.stdout, p.stdout
    assert "was restarted 1 times already (fault.restarts = 1)" in p.stdout, p.stdout
