"""test_compression: pushes and pulls in a compressed wire type (bf16, fp16, onebit, topk,
randomk, with error feedback) against a real cluster, every pulled value checked against a
single-process replay (compressed_worker.py, wire_ref.py); the bytes a compressed push puts on
the wire; refusals of a bad codec and of workers that disagree on one."""
from __future__ import annotations

import re
import sys

import pytest
from cluster import CONF, SRC, Cluster, worker_env

# a generous liveness timeout: the suite runs two tests per core
DECLARED = ["--model.trainer=declared", "--optimizer.aggregate=mean", "--optimizer.lr=0.5",
            "--fault.timeout_ms=30000"]
WORKER = str(SRC / "tests" / "python" / "compressed_worker.py")


@pytest.fixture
def cluster_of(tmp_path):
    made: list[Cluster] = []

    def make(*args: str) -> Cluster:
        made.append(Cluster(tmp_path, *args))
        return made[-1]

    yield make
    for c in made:
        c.stop()


@pytest.mark.parametrize("codec", ["bf16", "fp16", "onebit", "topk:0.1", "randomk:64",
                                   "topk:0.05,ef=none"])
def test_compressed_run_equals_the_replay(cluster_of, codec):
    pytest.importorskip("numpy")
    c = cluster_of(*DECLARED)
    settings = [a[2:] for a in DECLARED] + [f"cluster.scheduler={c.endpoint}"]
    for i in range(2):
        c.start(f"worker{i}", sys.executable, WORKER, codec, str(CONF), *settings,
                env=worker_env())
    for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
        assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    for i in range(2):
        assert "values checked, 0 wrong" in c.log(f"worker{i}"), c.log(f"worker{i}")


def test_fp16_values_out_of_range_go_as_float32_and_are_reported(cluster_of):
    pytest.importorskip("numpy")
    c = cluster_of(*DECLARED)
    settings = [a[2:] for a in DECLARED] + [f"cluster.scheduler={c.endpoint}"]
    env = worker_env()
    env["COMPRESSED_BIG"] = "1e6"  # / 2 workers: 5e5, far above fp16's 65504
    for i in range(2):
        c.start(f"worker{i}", sys.executable, WORKER, "fp16", str(CONF), *settings, env=env)
    for name in ["worker0", "worker1", "server0", "server1", "scheduler"]:
        assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    for i in range(2):
        log = c.log(f"worker{i}")
        assert "values checked, 0 wrong" in log, log
        assert 'tensor "avg": 3 values out of fp16\'s range' in log, log


def test_workers_that_disagree_on_a_codec_are_refused_at_the_join(cluster_of):
    pytest.importorskip("numpy")
    c = cluster_of(*DECLARED)
    settings = [a[2:] for a in DECLARED] + [f"cluster.scheduler={c.endpoint}"]
    for i, codec in enumerate(["bf16", "fp16"]):
        c.start(f"worker{i}", sys.executable, WORKER, codec, str(CONF), *settings,
                env=worker_env())
    assert c.finish("worker0") != 0 or c.finish("worker1") != 0
    logs = c.log("worker0") + c.log("worker1") + c.log("scheduler")
    # ranks go by the order of arrival: either worker may be worker 0
    assert re.search(r'worker 1 declared tensor 0 "avg" with compression (bf16|fp16), worker 0 '
                     r"with (fp16|bf16)", logs), logs


def test_workers_whose_confs_disagree_on_compression_are_refused(cluster_of):
    pytest.importorskip("numpy")
    c = cluster_of(*DECLARED)
    settings = [a[2:] for a in DECLARED] + [f"cluster.scheduler={c.endpoint}"]
    for i, codec in enumerate(["bf16", "onebit"]):
        c.start(f"worker{i}", sys.executable, WORKER, "bf16", str(CONF), *settings,
                f"push.compression={codec}", env=worker_env())
    assert c.finish("worker0") != 0 or c.finish("worker1") != 0
    logs = c.log("worker0") + c.log("worker1") + c.log("scheduler")
    assert re.search(r"the workers disagree on push.compression: worker 1 has (bf16|onebit), "
                     r"worker 0 (onebit|bf16)", logs), logs


def test_an_unknown_codec_is_refused_naming_the_tensor(tmp_path):
    import ordo

    client = ordo.Client(str(CONF), {"model.trainer": "declared"})
    k = client.declare("fc.weight", 10)
    with pytest.raises(ordo.OrdoError, match=r'"fc.weight".*unknown codec "zstd"'):
        client.declare_compression(k, "zstd")
    with pytest.raises(ordo.OrdoError, match=r'"fc.weight".*k "0" is out of range'):
        client.declare_compression(k, "topk:0")
