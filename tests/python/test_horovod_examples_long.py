"""test_horovod_examples_long (ctest label long): Horovod's elastic synthetic benchmark
(examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py: hvd.elastic.run,
TorchState, commit every batch, a reset callback) with and without --fp16-allreduce, as
test_horovod_examples.py runs the flat one: only the import changed, under ordo-launch, the
parameters equal single-process SGD within 1e-5 (fp32). Needs torch and torchvision."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")
pytest.importorskip("torchvision", reason="torchvision is not installed")

import test_horovod_examples as ex  # noqa: E402


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_elastic_synthetic_benchmark(tmp_path: Path, fp16: bool):
    """The elastic benchmark: rank 0's model reaches every worker at run()'s first sync."""
    ex.run_benchmark(tmp_path, "pytorch_synthetic_benchmark_elastic.py", fp16)
