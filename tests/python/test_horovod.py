"""test_horovod: horovod.torch's public names on ordo.torch. Every name of Horovod's
horovod/torch/__init__.py (the list below, written from it) exists on ordo.torch, and each one
marked as working is called in the cluster case (hvd_worker.py, 2 workers), whose results are
checked against one process: allreduce with every op and through the servers, allgather of
unequal first dimensions, broadcast from rank 1, alltoall with splits, reducescatter,
SyncBatchNorm against BatchNorm on both batches, join with 3 and 5 batches. Mismatched shapes
or dtypes fail on every rank, naming the tensor and both shapes. Needs torch (skipped without
it)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")

import hvd_compress_worker  # noqa: E402
import hvd_worker  # noqa: E402
import ordo.torch  # noqa: E402
import torch_mlp  # noqa: E402
from torch_cluster import SRC, Cluster  # noqa: E402

# horovod/torch/__init__.py (horovod 0.28): the names it imports, in its order.
HOROVOD_TORCH = [
    "elastic", "Compression", "allgather_object", "broadcast_object",
    "broadcast_optimizer_state", "broadcast_parameters", "allreduce", "allreduce_async",
    "allreduce_", "allreduce_async_", "grouped_allreduce", "grouped_allreduce_async",
    "grouped_allreduce_", "grouped_allreduce_async_", "sparse_allreduce_async", "allgather",
    "allgather_async", "grouped_allgather", "grouped_allgather_async", "broadcast",
    "broadcast_async", "broadcast_", "broadcast_async_", "alltoall", "alltoall_async",
    "reducescatter", "reducescatter_async", "grouped_reducescatter",
    "grouped_reducescatter_async", "join", "barrier", "poll", "synchronize", "init", "shutdown",
    "is_initialized", "start_timeline", "stop_timeline", "size", "local_size", "cross_size",
    "rank", "local_rank", "cross_rank", "mpi_threads_supported", "mpi_enabled", "mpi_built",
    "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built",
    "rocm_built", "ProcessSet", "global_process_set", "add_process_set", "remove_process_set",
    "Average", "Sum", "Adasum", "Min", "Max", "Product", "HorovodInternalError",
    "DistributedOptimizer", "SyncBatchNorm",
]
# horovod/torch/elastic/__init__.py's __all__
HOROVOD_ELASTIC = ["TorchState", "ElasticSampler", "run"]

# ordo's answer for each (docs/torch.md's table): the *_built queries answer truthfully,
# Adasum is refused; every other name works.
ANSWERS = {n: "works" for n in HOROVOD_TORCH}
ANSWERS.update({n: "answers" for n in (
    "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled", "gloo_built",
    "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "remove_process_set",
    "stop_timeline", "HorovodInternalError")})
ANSWERS["Adasum"] = "refused"


def test_every_horovod_name_is_on_ordo_torch():
    """Every horovod.torch name exists on ordo.torch (and hvd.elastic's), none an
    AttributeError; the docs' table lists each one."""
    missing = [n for n in HOROVOD_TORCH if not hasattr(ordo.torch, n)]
    assert not missing, missing
    assert [n for n in HOROVOD_ELASTIC if not hasattr(ordo.torch.elastic, n)] == []
    assert set(HOROVOD_TORCH) <= set(ordo.torch.__all__)
    docs = (SRC / "docs" / "torch.md").read_text()
    table = docs.split("## Horovod's and BytePS's names")[1].split("### Compression")[0]
    undocumented = [n for n in HOROVOD_TORCH if f"`{n}`" not in table]
    assert not undocumented, undocumented


def test_refusals_name_the_call_and_what_to_use():
    """Adasum, a subset process set, an MPI communicator and a codec of the script's own are
    refused before anything runs, each error naming the call and what to use instead."""
    opt = torch.optim.SGD(torch_mlp.model().parameters(), lr=0.1)
    with pytest.raises(ValueError, match=r"DistributedOptimizer: op=Adasum .* use op=Average"):
        ordo.torch.optimizer.horovod_options(None, "gradients", None, ordo.torch.Adasum, 1.0,
                                             0, None, None)
    with pytest.raises(ValueError, match=r"process_set=.*every worker"):
        ordo.torch.optimizer.horovod_options(None, "gradients", None, None, 1.0, 0, None,
                                             ordo.torch.ProcessSet([0, 5, 7]))
    with pytest.raises(ValueError, match="comm= is an MPI communicator"):
        ordo.torch.init(comm=object())

    class Mine:  # a Horovod Compressor of the script's own: ordo compresses on the wire
        @staticmethod
        def compress(t):
            return t, None

    with pytest.raises(ValueError, match=r"not one of ordo's codecs.*Compression\.none, \.fp16"):
        ordo.torch.compression.codec_of(Mine)
    assert ordo.torch.Compression.topk(0.01).codec == "topk:0.01"
    assert ordo.torch.Compression.randomk(8, error_feedback=False).codec == "randomk:8,ef=none"
    assert ordo.torch.Compression.fp16.compress(torch.ones(2))[0].dtype == torch.float32
    del opt


def _split(t: torch.Tensor, sizes: list[int], i: int) -> torch.Tensor:
    return t[sum(sizes[:i]):sum(sizes[:i + 1])]


def _expected(me: int) -> dict:
    """_expected computes in one process what rank me's collectives must return."""
    x = [hvd_worker.inputs(r) for r in range(2)]
    s = x[0]["x"] + x[1]["x"]
    m = x[0]["metric"] + x[1]["metric"]
    rows = torch.cat([x[0]["rows"], x[1]["rows"]])
    a2a = torch.cat([_split(x[r]["a2a"], hvd_worker.A2A_SPLITS[r], me) for r in range(2)])
    even = torch.cat([_split(x[r]["rs"][:4], [2, 2], me) for r in range(2)])
    rs_sum = x[0]["rs"] + x[1]["rs"]
    rs_rows = [3, 2]  # 5 rows over 2 ranks: the first gets one more, as Horovod splits
    x_rows = [2, 1]
    sparse = torch.zeros(6)
    for r in range(2):
        sparse[x[r]["sparse_idx"][0]] += x[r]["sparse_val"]
    return {
        "avg": s / 2, "avg_old": s / 2, "sum": s, "min": torch.minimum(x[0]["x"], x[1]["x"]),
        "max": torch.maximum(x[0]["x"], x[1]["x"]), "prod": x[0]["x"] * x[1]["x"],
        "int_avg": torch.div(x[0]["ints"] + x[1]["ints"], 2, rounding_mode="floor"),
        "scaled": s, "async": s, "inplace": s, "inplace_async": s / 2,
        "grouped": [s, m], "grouped_async": [s / 2, m / 2], "grouped_inplace": [s, m],
        "grouped_inplace_async": [s / 2, m / 2], "declared": m / 2, "declared_sum": m,
        "sparse": sparse, "gather": rows, "gather_async": rows,
        "ggather": [rows, torch.cat([x[0]["x"], x[1]["x"]])],
        "ggather_async": [rows, torch.cat([x[0]["x"], x[1]["x"]])],
        "bcast": x[1]["x"], "bcast_async": x[1]["x"], "bcast_inplace": x[1]["x"],
        "bcast_inplace_async": x[1]["x"],
        "a2a": a2a, "a2a_async": (a2a, torch.tensor([hvd_worker.A2A_SPLITS[r][me]
                                                     for r in range(2)], dtype=torch.int32)),
        "a2a_splits": torch.tensor([hvd_worker.A2A_SPLITS[r][me] for r in range(2)],
                                   dtype=torch.int32),
        "a2a_even": even, "rs": _split(rs_sum / 2, rs_rows, me),
        "rs_sum": _split(rs_sum, rs_rows, me),
        "grs": [_split(rs_sum, rs_rows, me), _split(s, x_rows, me)],
        "grs_async": [_split(rs_sum / 2, rs_rows, me), _split(s / 2, x_rows, me)],
        # d/dx of sum(w_r * allreduce(x)) over the ranks, w_r = arange * (r + 1); of
        # sum(c * allgather(rows)) on both ranks, c = arange; of sum(w_r * broadcast(x, 1)):
        # the root gets the ranks' mean, the others zeros (as Horovod's)
        "grad_allreduce": torch.arange(12.0).reshape(3, 4) * 3,
        "grad_allgather": _split(2 * torch.arange(28.0).reshape(7, 4), [2, 5], me),
        "grad_broadcast": torch.arange(12.0).reshape(3, 4) * 1.5 if me == 1
        else torch.zeros(3, 4),
    }


def _sync_bn_reference(me: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """BatchNorm1d on both ranks' batches together: rank me's rows of the output and of the
    input's gradient (of the sum of both ranks' losses), and the running variance."""
    xs = [hvd_worker.inputs(r)["bn"] for r in range(2)]
    full = torch.cat(xs).requires_grad_(True)
    bn = torch.nn.BatchNorm1d(3)
    y = bn(full)
    w = torch.cat([torch.arange(xs[0].numel(), dtype=y.dtype).reshape(xs[0].shape)] * 2)
    (y * w).sum().backward()
    rows = slice(me * 4, (me + 1) * 4)
    return y.detach()[rows], full.grad[rows], bn.running_var


def _join_reference(steps: int) -> dict[str, torch.Tensor]:
    """SGD on the mean over both ranks of their gradients, a rank out of batches counting as
    zeros (join), for the first steps steps."""
    net = torch_mlp.model()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    xs, ys = torch_mlp.data()
    for t in range(steps):
        grads = []
        for r in range(2):
            net.zero_grad()
            if t < hvd_worker.JOIN_BATCHES[r]:
                rows = slice(r * 8, (r + 1) * 8)
                torch.nn.functional.mse_loss(net(xs[t, rows]), ys[t, rows]).backward()
                grads.append([p.grad.clone() for p in net.parameters()])
            else:
                grads.append([torch.zeros_like(p) for p in net.parameters()])
        for p, g0, g1 in zip(net.parameters(), *grads, strict=True):
            p.grad = (g0 + g1) / 2
        opt.step()
    return net.state_dict()


def _close(got, want, what: str) -> None:
    if isinstance(want, (list, tuple)):
        assert len(got) == len(want), what
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            _close(g, w, f"{what}[{i}]")
        return
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6, msg=what)


def test_collectives_through_a_cluster_equal_one_process(tmp_path: Path):
    """2 workers, 1 server: every collective's result equals one process's computation; the
    mismatches fail on both ranks with the same text; each working name was called."""
    conf = tmp_path / "hvd.ini"
    conf.write_text("[cluster]\nservers = 1\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    "[fault]\ntimeout_ms = 5000\n")
    c = Cluster(tmp_path, conf=conf, servers=1)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(SRC / "tests" / "python" / "hvd_worker.py"),
                               str(tmp_path)])
        for name in ["worker0", "worker1", "server0", "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    called: set[str] = set()
    for me in range(2):
        got = torch.load(tmp_path / f"out{me}.pt", weights_only=False)
        called |= set(json.loads((tmp_path / f"names{me}.json").read_text()))
        assert (got["rank"], got["size"], got["initialized"]) == (me, 2, True)
        assert (got["cross_rank"], got["cross_size"]) == (me // got["local_size"],
                                                          2 // got["local_size"])
        for k, want in _expected(me).items():
            _close(got[k], want, f"rank {me} {k}")
        assert got["inplace_async_poll"] is True
        assert got["objects"] == [{"rank": 0, "text": "r"}, {"rank": 1, "text": "rr"}]
        assert got["object"] == {"from": 1}
        y, dx, running = _sync_bn_reference(me)
        _close(got["bn_y"], y, f"rank {me} SyncBatchNorm output")
        _close(got["bn_dx"], dx, f"rank {me} SyncBatchNorm input gradient")
        _close(got["bn_running"], running, f"rank {me} SyncBatchNorm running_var")
        assert got["last_joined"] == 1, got["last_joined"]
        want = _join_reference(hvd_worker.JOIN_BATCHES[me])
        for k, v in want.items():
            _close(got["params"][k], v, f"rank {me} {k} after join")
        e = got["errors"]
        assert "allreduce: tensor 'bad' has shape [2, 3] on rank 0 and [3, 3] on rank 1" in e[0]
        assert "tensor 'bad' has dtype torch.float32 on rank 0 and torch.float64 on rank 1" \
            in e[1]
        assert "allgather: tensor 'bad' has shape [2, 3] on rank 0 and [2, 4] on rank 1" in e[2]
        assert "rank 0 called allreduce 'bad' where rank 1 called allgather 'bad'" in e[3], e[3]
        assert "op=Adasum" in e[4] and "use op=Average" in e[4], e[4]
        assert "add_process_set" in e[5] and "every worker" in e[5], e[5]
        assert "allreduce: process_set=" in e[6], e[6]
        assert got["queries"]["mpi_built"] is False and got["queries"]["gloo_built"] is False
        assert got["queries"]["cuda_built"] == torch.cuda.is_available()
        assert got["remove_process_set"] is False and got["internal_error"] and got["elastic"]
    assert got["errors"] == torch.load(tmp_path / "out0.pt", weights_only=False)["errors"]
    trace = json.loads((tmp_path / "timeline.json").read_text())
    assert trace["traceEvents"], "rank 0's timeline is empty"
    assert (tmp_path / "timeline.json.1").exists()
    works = {n for n, a in ANSWERS.items() if a in ("works", "answers")}
    assert not works - called, f"working names no cluster case called: {works - called}"


def _compressed_reference(codec: str, rounded: bool, op: str = "Average"
                          ) -> dict[str, torch.Tensor]:
    """SGD on the mean of both ranks' gradients as the codec carries it: each push rounded
    to 16 bits (fp16: scaled by 1 / workers before the cast and back after it), summed in
    float32 by the server, the mean rounded again (unscaled) for the pull."""
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "none": torch.float32}[codec]
    scale = 0.5 if codec == "fp16" else 1.0

    def push(t: torch.Tensor) -> torch.Tensor:
        return (t * scale).to(dtype).float() / scale if rounded else t

    def pull(t: torch.Tensor) -> torch.Tensor:
        return t.to(dtype).float() if rounded else t

    torch.manual_seed(0)
    net = torch_mlp.model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    xs, ys = torch_mlp.data()
    part = torch_mlp.BATCH // 2
    for t in range(hvd_compress_worker.ITERS):
        grads = []
        for r in range(2):
            net.zero_grad()
            rows = slice(r * part, (r + 1) * part)
            torch.nn.functional.mse_loss(net(xs[t, rows]), ys[t, rows]).backward()
            grads.append([push(p.grad) for p in net.parameters()])
        for p, g0, g1 in zip(net.parameters(), *grads, strict=True):
            p.grad = pull((g0 + g1) / 2) * (2 if op == "Sum" else 1)
        opt.step()
    return net.state_dict()


@pytest.mark.parametrize("codec,op", [("fp16", "Average"), ("bf16", "Average"),
                                      ("none", "Sum")])
def test_distributed_optimizer_compression_uses_the_wire_codec(tmp_path: Path, codec: str,
                                                               op: str):
    """DistributedOptimizer(compression=Compression.fp16 or .bf16): the parameters equal one
    process whose gradients are rounded as the wire rounds them (each push, then the pulled
    mean), and differ from the unrounded run, so the codec was applied. op=Sum: the sum of
    the gradients (twice the mean's step)."""
    if not hasattr(ordo.Client, "declare_compression"):
        pytest.skip("this libordo's binding has no wire codecs (Client.declare_compression)")
    conf = tmp_path / "hvd.ini"
    conf.write_text("[cluster]\nservers = 1\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    "[fault]\ntimeout_ms = 5000\n")
    c = Cluster(tmp_path, conf=conf, servers=1)
    worker = str(SRC / "tests" / "python" / "hvd_compress_worker.py")
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, worker, codec, str(tmp_path / f"c{r}.pt"),
                               op])
        for name in ["worker0", "worker1", "server0", "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    want = _compressed_reference(codec, rounded=True, op=op)
    # what the run must differ from: fp16, bf16 unrounded; Sum, the mean
    plain = _compressed_reference(codec, rounded=False, op=op) if codec != "none" else \
        _compressed_reference(codec, rounded=False, op="Average")
    for r in range(2):
        got = torch.load(tmp_path / f"c{r}.pt", weights_only=True)
        for k, v in want.items():
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-6, msg=f"rank {r} {k}")
        assert any((got[k] - plain[k]).abs().max() > 1e-5 for k in plain), \
            f"rank {r}: the {codec} {op} run equals the other one"
