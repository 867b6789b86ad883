"""test_horovod_examples_long (ctest label long): Horovod's synthetic benchmark with
--fp16-allreduce, and its elastic one (examples/elastic/pytorch/
pytorch_synthetic_benchmark_elastic.py: hvd.elastic.run, TorchState, commit every batch, a
reset callback) with and without it, run as test_horovod_examples.py runs the flat one: only
the import changed, under ordo-launch, the parameters equal single-process SGD within 1e-5
(fp16: one process replaying the wire's rounding). Also DDP with ordo's comm hook and a
Compression as its state (bf16 on the wire), against one process replaying the rounding.
Needs torch and torchvision."""
from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")
pytest.importorskip("torchvision", reason="torchvision is not installed")

import test_horovod_examples as ex  # noqa: E402
import torch  # noqa: E402
import torch_mlp  # noqa: E402
from test_launch_torch import HERE, launch  # noqa: E402


def test_synthetic_benchmark_fp16(tmp_path: Path):
    """The flat benchmark with --fp16-allreduce: Compression.fp16 on the wire, the parameters
    those of one process replaying the wire's rounding."""
    ex.run_benchmark(tmp_path, "pytorch_synthetic_benchmark.py", True)


@pytest.mark.parametrize("fp16", [False, True], ids=["fp32", "fp16"])
def test_elastic_synthetic_benchmark(tmp_path: Path, fp16: bool):
    """The elastic benchmark: rank 0's model reaches every worker at run()'s first sync."""
    ex.run_benchmark(tmp_path, "pytorch_synthetic_benchmark_elastic.py", fp16)


def test_ddp_comm_hook_with_a_codec_as_its_state(tmp_path: Path):
    """register_comm_hook(Compression.bf16, ordo.torch.ddp_comm_hook): each bucket's gradients
    go in bf16 and the mean comes back in bf16; the parameters equal one process rounding
    each rank's gradient and the mean to bf16 (SGD with momentum and weight decay)."""
    import sys
    launch(tmp_path, "--workers", "2", "--servers=2", "--fault.timeout_ms=10000",
           "--", sys.executable, str(HERE / "ddp_worker.py"), str(tmp_path), "bf16")

    def bf16(t: torch.Tensor) -> torch.Tensor:
        return t.bfloat16().float()

    torch.manual_seed(0)
    net = torch_mlp.model()
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9, weight_decay=0.01)
    xs, ys = torch_mlp.data()
    part = torch_mlp.BATCH // 2
    for t in range(torch_mlp.ITERS):
        grads = []
        for r in range(2):
            net.zero_grad()
            rows = slice(r * part, (r + 1) * part)
            torch.nn.functional.mse_loss(net(xs[t, rows]), ys[t, rows]).backward()
            grads.append([bf16(p.grad) for p in net.parameters()])
        for p, g0, g1 in zip(net.parameters(), *grads, strict=True):
            p.grad = bf16((g0 + g1) / 2)
        opt.step()
    for r in range(2):
        got = torch.load(tmp_path / f"out{r}.pt", weights_only=True)
        for k, v in net.state_dict().items():
            torch.testing.assert_close(got[k], v, rtol=1e-5, atol=1e-6, msg=f"{k} of worker {r}")
