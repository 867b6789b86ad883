"""test_sampler: ordo.torch.ElasticSampler. With the batch service off it is
DistributedSampler, index for index; with it on (asp) two workers, one slow, share each epoch:
every sample read exactly once per epoch (who reads how many depends on timing, which the
test does not assert)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import ordo.torch as hvd  # noqa: E402
from torch.utils.data import DistributedSampler  # noqa: E402
from torch_cluster import SRC, Cluster  # noqa: E402

WORKER = SRC / "tests" / "python" / "sampler_worker.py"


@pytest.mark.parametrize("shuffle,drop_last", [(True, False), (False, False), (True, True)])
def test_service_off_is_distributed_sampler(shuffle: bool, drop_last: bool):
    data = list(range(103))
    for rank in range(3):
        mine = hvd.ElasticSampler(data, shuffle=shuffle, seed=7, num_replicas=3, rank=rank,
                                  drop_last=drop_last)
        theirs = DistributedSampler(data, num_replicas=3, rank=rank, shuffle=shuffle, seed=7,
                                    drop_last=drop_last)
        for epoch in range(2):
            mine.set_epoch(epoch)
            theirs.set_epoch(epoch)
            assert list(mine) == list(theirs)
            assert len(mine) == len(theirs)


def conf(tmp: Path, mode: str) -> Path:
    path = tmp / "sampler.ini"
    path.write_text("[cluster]\nservers = 1\nworkers = 2\n\n[model]\ntrainer = declared\n\n"
                    f"[sync]\nmode = {mode}\n\n[fault]\ntimeout_ms = 5000\n")
    return path


def read_by_rank(tmp: Path, mode: str, slow: list[str]) -> dict[int, list[list[int]]]:
    """read_by_rank runs two sampler_workers (2 epochs; worker r sleeps slow[r] per batch)
    and returns what each read, per epoch."""
    c = Cluster(tmp, conf=conf(tmp, mode), servers=1)
    try:
        for r in range(2):
            c.start_worker(r, [sys.executable, str(WORKER), "2", slow[r]])
        for name in ["worker0", "worker1", "server0", "scheduler"]:
            assert c.finish(name) == 0, f"{name}: {c.log(name)}"
    finally:
        c.stop()
    read = {}
    for r in range(2):
        line = [x for x in c.log(f"worker{r}").splitlines() if x.startswith("{")][-1]
        out = json.loads(line)
        read[out["rank"]] = out["epochs"]
    return read


def test_service_off_in_a_cluster_is_each_workers_share(tmp_path: Path):
    read = read_by_rank(tmp_path, "bsp", ["0", "0"])
    for r in range(2):
        theirs = DistributedSampler(list(range(100)), num_replicas=2, rank=r, shuffle=True,
                                    seed=5)
        for e in range(2):
            theirs.set_epoch(e)
            assert read[r][e] == list(theirs), (r, e, read)


def test_two_workers_share_each_epoch(tmp_path: Path):
    read = read_by_rank(tmp_path, "asp", ["0", "0.2"])
    for e in range(2):
        both = read[0][e] + read[1][e]
        assert sorted(both) == list(range(100)), (e, read)
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["samples"] == 200, summary
    assert sum(summary["batches"]) == 20, summary
