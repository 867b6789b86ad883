"""test_compression: pushes and pulls in a compressed wire type (bf16, fp16, onebit, topk,
randomk, with error feedback) against a real cluster, every pulled value checked against a
single-process replay (compressed_worker.py, wire_ref.py); the bytes a compressed push puts on
the wire; refusals of a bad codec and of workers that disagree on one."""
from __future__ import annotations

import sys

import pytest
from cluster import CONF, SRC, Cluster, worker_env

DECLARED = ["--model.trainer=declared", "--optimizer.aggregate=mean", "--optimizer.lr=0.5"]
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


def test_workers_that_disagree_on_a_codec_are_refused_at_the_join(cluster_of):
    pytest.importorskip("numpy")
    c = cluster_of(*DECLARED)
    settings = [a[2:] for a in DECLARED] + [f"cluster.scheduler={c.endpoint}"]
    for i, codec in enumerate(["bf16", "fp16"]):
        c.start(f"worker{i}", sys.executable, WORKER, codec, str(CONF), *settings,
                env=worker_env())
    assert c.finish("worker0") != 0 or c.finish("worker1") != 0
    logs = c.log("worker0") + c.log("worker1") + c.log("scheduler")
    assert "with compression fp16, worker 0 with bf16" in logs, logs


def test_an_unknown_codec_is_refused_naming_the_tensor(tmp_path):
    import ordo

    client = ordo.Client(str(CONF), {"model.trainer": "declared"})
    k = client.declare("fc.weight", 10)
    with pytest.raises(ordo.OrdoError, match=r'"fc.weight".*unknown codec "zstd"'):
        client.declare_compression(k, "zstd")
    with pytest.raises(ordo.OrdoError, match=r'"fc.weight".*k "0" is out of range'):
        client.declare_compression(k, "topk:0")
