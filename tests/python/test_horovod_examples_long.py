"""test_horovod_examples_long (ctest label long): Horovod's synthetic benchmark with
--fp16-allreduce, and its elastic one (examples/elastic/pytorch/
pytorch_synthetic_benchmark_elastic.py: hvd.elastic.run, TorchState, commit every batch, a
reset callback) with and without it, run as test_horovod_examples.py runs the flat one: only
the import changed, under ordo-launch, the parameters equal single-process SGD within 1e-5
(fp16: one process replaying the wire's rounding). Needs torch and torchvision."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")
pytest.importorskip("torchvision", reason="torchvision is not installed")

import test_horovod_examples as ex  # noqa: E402


def test_synthetic_benchmark_fp16(tmp_path: Path):
    """The flat benchmark with --fp16-allreduce: Compression.fp16 on the wire, the parameters
    those of one process replaying the wire's rounding."""
    ex.run_benchmark(tmp_path, "pytorch_synthetic_benchmark.py", True)


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_elastic_synthetic_benchmark(tmp_path: Path, fp16: bool):
    """The elastic benchmark: rank 0's model reaches every worker at run()'s first sync."""
    ex.run_benchmark(tmp_path, "pytorch_synthetic_benchmark_elastic.py", fp16)
