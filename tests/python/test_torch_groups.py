"""test_torch_groups: ordo.torch workers in host groups ([cluster] local_size = 2, [intra]
backend = shm, or auto resolved to shm) against real clusters of the C daemons on loopback:
4 workers in 2 groups equal one process training on the whole batches, in both
DistributedOptimizer modes, with each CPU gradient produced in the group's shared memory; a
SIGKILLed member ends the run naming it and leaves nothing of ordo in /dev/shm; on a slow link
the next step runs while the owners' pushes are still on the wire, and a tensor's push held
behind its outstanding one, with the replay's results. The CUDA
case (backend nccl or auto, through libordo's NCCL plugin) needs 2 GPUs and has never run.
Needs torch (skipped without it)."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")

import torch_mlp  # noqa: E402
from torch_cluster import SRC, Cluster  # noqa: E402

WORKER = SRC / "tests" / "python" / "torch_groups_worker.py"
WORKERS = 4
FAULT_MS = 3000


def conf(tmp: Path, push: str = "dense", backend: str = "shm", policy: str = "fifo") -> Path:
    path = tmp / "groups.ini"
    path.write_text(f"[cluster]\nservers = 2\nworkers = {WORKERS}\nlocal_size = 2\n\n"
                    f"[order]\npolicy = {policy}\n\n"
                    f"[intra]\nbackend = {backend}\n\n[model]\ntrainer = declared\n\n"
                    f"[push]\nmode = {push}\nmerge = all\n\n"
                    f"[fault]\ntimeout_ms = {FAULT_MS}\nheartbeat_ms = 200\nstartup_ms = 180000\n")
    return path


def ordo_segments() -> list[str]:
    return [n for n in os.listdir("/dev/shm") if "ordo" in n] if os.path.isdir("/dev/shm") else []


def start(tmp: Path, *args: str, push: str = "dense", backend: str = "shm",
          policy: str = "fifo") -> Cluster:
    c = Cluster(tmp, conf=conf(tmp, push, backend, policy), servers=2)
    for r in range(WORKERS):
        c.start_worker(r, [sys.executable, str(WORKER), *args[:1], str(tmp / f"out{r}.pt"),
                           *args[1:]])
    return c


def finish_all(c: Cluster) -> Cluster:
    """finish_all waits for every worker, the servers and the scheduler to exit 0 (stopping
    the cluster either way) and returns c for its logs."""
    try:
        for name in [f"worker{r}" for r in range(WORKERS)] + ["server0", "server1",
                                                               "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    return c


@pytest.mark.parametrize("mode,gate,push,backend", [("gradients", "", "dense", "auto"),
                                                    ("gradients", "gate", "dense", "shm"),
                                                    ("server", "", "dense", "shm"),
                                                    ("server", "gate", "dense", "shm"),
                                                    ("server", "gate", "merged", "shm")])
def test_four_workers_in_two_groups_equal_one_process(tmp_path: Path, mode: str, gate: str,
                                                      push: str, backend: str):
    """With gate, model=: each module's forward waits for its own values (server mode: the
    parameters; gradients mode: Adam per parameter on the mean), and after the profiled
    first steps the cluster re-plans from rank 0's profile (replan-1.json): every worker's
    priorities are the new plan's, the host groups keep their path, the result is
    unchanged. Merged: the owner pushes the group's sums as one merge group (merge = all).
    Backend auto: CPU parameters, so every worker resolves it to shm."""
    # gate: policy tio, whose plan from the profile (first layer first) differs from the
    # join's (the worker declares the last layer first)
    c = finish_all(start(tmp_path, mode, gate, push=push, backend=backend,
                         policy="tio" if gate else "fifo"))
    log, sched = c.log("worker0"), c.log("scheduler")
    assert f"intra: 2 groups of 2 workers ({backend}" in sched, sched
    assert f"(shm, {push} pushes inside" in log, log
    if backend == "auto":
        assert "intra.backend = auto: group 1 takes shm" in sched, sched
        assert "intra.backend = auto: shm (intra.device cpu)" in log, log
    for r in range(WORKERS):
        # every step's backward wrote each gradient into the library's buffer itself
        assert f"{torch_mlp.ITERS} steps, grads in the library's buffer in " \
               f"{torch_mlp.ITERS}" in c.log(f"worker{r}"), c.log(f"worker{r}")
    if gate:  # model=: profiled, then re-planned on the bound models between two steps
        plan = json.loads((tmp_path / "run" / "replan-1.json").read_text())
        want_prio = dict(zip(plan["params"], plan["priorities"], strict=True))
        assert "replan 1: planned from worker 0's profile 'Sequential' (3 ops), policy tio" \
            in sched, sched
        assert "replan 1: every server switched; workers released" in sched, sched
        assert want_prio["0.weight"] < want_prio["2.weight"], want_prio
        assert not (tmp_path / "run" / "replan-2.json").exists()
        for r in range(WORKERS):
            wlog = c.log(f"worker{r}")
            assert "push path hier kept" in wlog, wlog
            got = {}
            for when in ("join", "end"):
                line = [ln for ln in wlog.splitlines()
                        if f"torch_groups_worker: {when} priorities " in ln]
                assert line, wlog
                got[when] = json.loads(line[-1].split("priorities ", 1)[1])
            assert got["end"] == want_prio, (r, got, want_prio)
            assert got["join"] != want_prio, (r, got, want_prio)
    torch.set_num_threads(1)
    net = torch_mlp.model()
    torch_mlp.train(net, torch_mlp.optimizer(mode, net.parameters()), 0, 1)
    want = net.state_dict()
    for r in range(WORKERS):
        got = torch.load(tmp_path / f"out{r}.pt")
        for k, v in want.items():
            # 1e-5 relative (1e-7 absolute near 0: the servers average 4 quarter-batch means)
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-7, msg=f"rank {r} {k}")
        assert not torch.equal(got["0.weight"], torch_mlp.model().state_dict()["0.weight"])
    assert not ordo_segments(), ordo_segments()


def test_a_killed_group_member_ends_the_run_naming_it(tmp_path: Path):
    before = set(ordo_segments())
    c = start(tmp_path, "server", "kill:1:3")
    try:
        assert c.finish("worker1") == -9, c.log("worker1")
        killed = time.monotonic()
        for r in (0, 2, 3):
            assert c.finish(f"worker{r}") != 0, c.log(f"worker{r}")
        took = time.monotonic() - killed
        for name in ["server0", "server1", "scheduler"]:
            c.finish(name)
    finally:
        c.stop()
    # a hang bound, not a timing: the member sees the pid gone at once (at the latest within
    # the fault timeout); the rest is Python's teardown on a loaded machine
    assert took < 60, took
    # its group's other member sees its pid gone in the segment and gives up (or, where that
    # member stalls, the scheduler misses its heartbeats): the scheduler aborts the run with
    # the reason, and every worker's error names worker 1
    sched = c.log("scheduler")
    assert "aborting the run" in sched and "worker 1 (pid" in sched, sched
    for r in (0, 2, 3):
        # the exception the program gets names it too (not only the library's log line)
        raised = [ln for ln in c.log(f"worker{r}").splitlines() if "OrdoError:" in ln]
        assert raised and "worker 1 (pid" in raised[-1], c.log(f"worker{r}")
    assert set(ordo_segments()) <= before, ordo_segments()


def test_leaving_with_the_next_values_on_the_wire(tmp_path: Path):
    """A worker that leaves right after its last step, while the values of the update it
    pushed are still on their way (8 MiB at an emulated 100 Mbit/s, and the last rank leaves
    3 s later, so the others' groups still serve): the library drops those values rather
    than copying them into the buffers leaving freed (every worker used to die of SIGSEGV)."""
    path = conf(tmp_path)
    path.write_text(path.read_text() + "\n[net]\nbandwidth = 100mbit\n")
    c = Cluster(tmp_path, conf=path, servers=2)
    for r in range(WORKERS):
        c.start_worker(r, [sys.executable, str(SRC / "tests" / "python" /
                                               "torch_groups_leave_worker.py"), "3"])
    finish_all(c)
    for r in range(WORKERS):
        assert f"rank {r} left" in c.log(f"worker{r}"), c.log(f"worker{r}")
    assert not ordo_segments(), ordo_segments()


@pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.device_count() < 2,
                    reason="needs 2 CUDA devices (a group's 2 members, one GPU each: NCCL "
                    "takes one rank per GPU)")
@pytest.mark.parametrize("backend", ["nccl", "auto"])
def test_cuda_workers_in_groups_equal_one_process(tmp_path: Path, backend: str):
    """NEVER RUN: written on a machine without a GPU. 4 workers with CUDA models in 2 groups
    of 2 (each group's members on GPUs 0 and 1), summing through libordo's NCCL plugin
    (backend nccl, or auto resolved to it from the CUDA parameters), equal one CPU process
    training on the whole batches."""
    c = finish_all(start(tmp_path, "server", "gate", "cuda", backend=backend))
    log = c.log("worker0")
    assert "(nccl, dense pushes inside" in log, log
    if backend == "auto":
        assert "intra.backend = auto: nccl (intra.device cuda)" in log, log
    torch.set_num_threads(1)
    net = torch_mlp.model()
    torch_mlp.train(net, torch_mlp.optimizer("server", net.parameters()), 0, 1)
    for r in range(WORKERS):
        got = torch.load(tmp_path / f"out{r}.pt")
        for k, v in net.state_dict().items():
            # the GPU's float32 sums round differently from the CPU's
            torch.testing.assert_close(got[k], v, rtol=1e-4, atol=1e-6, msg=f"rank {r} {k}")


def bf16_replay(mode: str, pulled_init: bool, spare: bool = False) -> dict[str, torch.Tensor]:
    """bf16_replay runs the 4 workers' training in one process, rounding where a bf16 run
    in 2 groups of 2 rounds (wire_ref): each group's float32 sum of its members' gradients
    goes out in bf16, the servers sum the groups' decoded values in float32 and take the
    mean; gradients mode: the pulled mean is rounded once, and every worker runs Adam on it;
    server mode: the servers run SGD with momentum and weight decay in float32 and a pull is
    the value rounded once (pulled_init: the first step's parameters too). spare: the
    workers' optimizer also has torch_groups_worker's SPARE, which no gradient reaches (zeros
    pushed every step). Returns the parameters every worker ends with."""
    import numpy as np
    import wire_ref

    f32 = np.float32
    torch.set_num_threads(1)
    net = torch_mlp.model()
    params = dict(net.named_parameters())
    if spare:
        import torch_groups_worker
        params["spare"] = torch.nn.Parameter(torch_groups_worker.spare())
    names = list(params)
    opt = torch_mlp.optimizer(mode, net.parameters()) if mode == "gradients" else None
    w = {n: p.detach().numpy().copy() for n, p in params.items()}  # server mode: the servers'
    mom = {n: np.zeros_like(v) for n, v in w.items()}
    send = {n: [wire_ref.Sender("bf16", v.size, WORKERS) for _ in range(2)] for n, v in w.items()}
    pull = {n: wire_ref.Puller("bf16", v.size) for n, v in w.items()}
    xs, ys = torch_mlp.data()
    part = torch_mlp.BATCH // WORKERS

    def load(values: dict[str, np.ndarray]) -> None:
        with torch.no_grad():
            for n in names:
                params[n].copy_(torch.from_numpy(values[n].reshape(params[n].shape)))

    if mode == "server" and pulled_init:
        load({n: pull[n].pull(w[n].ravel(), 0) for n in names})
    for t in range(torch_mlp.ITERS):
        grads = []
        for r in range(WORKERS):
            net.zero_grad()
            x = xs[t, r * part:(r + 1) * part]
            y = ys[t, r * part:(r + 1) * part]
            torch.nn.functional.mse_loss(net(x), y).backward()
            grads.append({n: params[n].grad.detach().numpy().ravel().copy()
                          if params[n].grad is not None else np.zeros(w[n].size, dtype=f32)
                          for n in names})
        mean = {}
        for n in names:
            total = np.zeros(w[n].size, dtype=f32)
            for gi in range(2):  # the owner pushes its group's float32 sum in bf16
                total = total + send[n][gi].send(grads[2 * gi][n] + grads[2 * gi + 1][n], t)
            mean[n] = f32(1.0 / WORKERS) * total
        if mode == "gradients":
            with torch.no_grad():
                for n in names:
                    params[n].grad = torch.from_numpy(
                        pull[n].pull(mean[n], t + 1).reshape(params[n].shape))
            opt.step()
        else:
            for n in names:
                v = w[n].ravel()
                mom[n] = f32(0.9) * mom[n].ravel() + (mean[n] + f32(0.01) * v)
                w[n] = v - f32(0.05) * mom[n]
            load({n: pull[n].pull(w[n], t + 1) for n in names})
    final = {n: p.detach().clone() for n, p in net.state_dict().items()}
    if spare:
        final["spare"] = params["spare"].detach().clone()
    return final


@pytest.mark.parametrize("mode", ["gradients", "server"])
def test_bf16_in_groups_equals_a_replay_that_rounds_the_same_values(tmp_path: Path, mode: str):
    """compression=bf16 in 2 groups of 2: the members sum in float32 inside the host and
    the owner pushes the sum in bf16; every worker ends with the parameters of a
    single-process replay that rounds the same values the same way (bf16_replay), within
    1e-6 relative."""
    pytest.importorskip("numpy")
    c = finish_all(start(tmp_path, mode, "bf16"))
    assert "intra: 2 groups of 2 workers (shm" in c.log("scheduler"), c.log("scheduler")
    want = bf16_replay(mode, pulled_init=True)
    plain = torch_mlp.model()
    torch_mlp.train(plain, torch_mlp.optimizer(mode, plain.parameters()), 0, 1)
    for r in range(WORKERS):
        got = torch.load(tmp_path / f"out{r}.pt")
        for k, v in want.items():
            torch.testing.assert_close(got[k], v, rtol=1e-6, atol=1e-9, msg=f"rank {r} {k}")
    # the rounding shows: float32 training ends elsewhere
    assert not torch.allclose(want["0.weight"], plain.state_dict()["0.weight"], rtol=1e-6,
                              atol=1e-9)


def test_the_next_step_overlaps_the_pushes_in_flight_and_equals_the_replay(tmp_path: Path):
    """step() returns once the group summed every gradient, before the owners' pushes reach
    the servers (the next forward runs while they are on the wire: every link emulated at
    20 Mbit/s with 30 ms latency). Server mode, gated, bf16 (the owner encodes its sum as it
    leaves), with rank 1 sleeping before each backward (its partner's step() must still wait
    for rank 1's gradients before zero_grad() may touch its own) and a parameter no module
    uses (its zeros are pushed from step(), while its last push, 200 KB, is still on the wire:
    the library holds the new one behind it). Every worker ends with the replay's parameters
    within 1e-6 relative."""
    pytest.importorskip("numpy")
    path = conf(tmp_path, policy="tio")
    path.write_text(path.read_text() + "\n[net]\nbandwidth = 20mbit\nlatency_us = 30000\n")
    c = Cluster(tmp_path, conf=path, servers=2)
    for r in range(WORKERS):
        c.start_worker(r, [sys.executable, str(WORKER), "server", str(tmp_path / f"out{r}.pt"),
                           "gate", "bf16", "spare", "slow"])
    finish_all(c)
    want = bf16_replay("server", pulled_init=True, spare=True)
    for r in range(WORKERS):
        got = torch.load(tmp_path / f"out{r}.pt")
        assert set(got) == set(want), (set(got), set(want))
        for k, v in want.items():
            torch.testing.assert_close(got[k], v, rtol=1e-6, atol=1e-9, msg=f"rank {r} {k}")
    # the spare parameter moved (weight decay through momentum), as the replay's did
    import torch_groups_worker
    assert not torch.allclose(want["spare"], torch_groups_worker.spare())
