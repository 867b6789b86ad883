"""test_horovod_examples: Horovod's own PyTorch examples (horovod_examples/, Apache-2.0, kept
as Horovod has them) run under ordo-launch with only `import horovod.torch as hvd` changed to
`import ordo.torch as hvd`: the synthetic benchmark on a small torchvision model and batch,
and the MNIST example on 640 images of Fashion-MNIST (a generated set without the dataset
package) in its MNIST folder layout. Each finishes with exit 0 and the parameters equal
single-process SGD on both ranks' batches within 1e-5. The runs with --fp16-allreduce and the
elastic benchmark are in test_horovod_examples_long.py (ctest label long). Needs torch and
torchvision (skipped without them)."""
from __future__ import annotations

import gzip
import os
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (scripts/setup-python.sh)")
tv = pytest.importorskip("torchvision", reason="torchvision is not installed")

import ordo  # noqa: E402
from cluster import BIN, SRC  # noqa: E402

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE / "horovod_examples"
FMNIST = Path(os.environ.get("ORDO_MODEL_DATA_DIR") or "/usr/share/datasets/fashion-mnist")
MODEL = "shufflenet_v2_x0_5"  # torchvision's smallest: 1.4 M parameters, no dropout
BENCH = ["--no-cuda", "--model", MODEL, "--batch-size", "2", "--num-warmup-batches", "1",
         "--num-batches-per-iter", "1", "--num-iters", "2"]
BENCH_STEPS = 3  # warm-up + iterations x batches per iteration


def port(tmp: Path, name: str) -> Path:
    """port copies Horovod's example into tmp with its import of horovod changed to ordo."""
    text = (EXAMPLES / name).read_text()
    assert text.count("import horovod.torch as hvd\n") == 1, name
    text = text.replace("import horovod.torch as hvd\n", "import ordo.torch as hvd\n")
    text = re.sub(r"^import horovod\n", "import ordo as horovod\n", text, flags=re.M)
    out = tmp / name
    out.write_text(text)
    return out


def launch(tmp: Path, script: Path, *args: str, settings: tuple[str, ...] = ()) -> str:
    """launch runs the script on 2 workers and 1 server under ordo-launch; its output."""
    env = dict(os.environ, OMP_NUM_THREADS="1", HOME=str(tmp),
               PYTHONPATH=os.pathsep.join([str(SRC / "python"), str(HERE)]))
    p = subprocess.run([str(SRC / "scripts" / "ordo-launch"), "--bin", str(BIN), "--workers",
                        "2", "--servers=1", "--fault.timeout_ms=20000", *settings, "--",
                        sys.executable, str(HERE / "hvd_example.py"), str(tmp), str(script),
                        *args], cwd=tmp, env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=600)
    assert p.returncode == 0, p.stdout
    return p.stdout


def _codecs() -> str | None:
    if not hasattr(ordo.Client, "declare_compression"):
        return "this libordo's binding has no wire codecs (Client.declare_compression)"
    return None


def _bench_reference(ranks: list[dict], fp16: bool) -> list[torch.Tensor]:
    """SGD (lr 0.01 x 2) on the mean of both ranks' gradients, each on its own fixed batch,
    from rank 0's initial model (seed 1000), for BENCH_STEPS steps; with fp16, each push and
    the pulled mean rounded to fp16 as the wire rounds them (a push scaled by 1 / workers
    before its cast and back after it; the servers sum float32; the pull cast unscaled)."""

    def push(t: torch.Tensor) -> torch.Tensor:
        return (t * 0.5).half().float() * 2.0 if fp16 else t

    def pull(t: torch.Tensor) -> torch.Tensor:
        return t.half().float() if fp16 else t

    torch.set_num_threads(1)
    torch.manual_seed(1000)
    model = getattr(tv.models, MODEL)()
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * 2)
    params = list(model.parameters())
    for _ in range(BENCH_STEPS):
        grads = []
        for r in ranks:
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(r["data"]), r["target"]).backward()
            grads.append([push(p.grad) for p in params])
        for p, g0, g1 in zip(params, *grads, strict=True):
            p.grad = pull((g0 + g1) / 2)
        opt.step()
    return [p.detach() for p in params]


def run_benchmark(tmp_path: Path, script: str, fp16: bool) -> None:
    """run_benchmark runs Horovod's synthetic benchmark script (flat, or elastic with
    hvd.elastic.run and TorchState) to its result line; fp32 ends with single-process SGD's
    parameters within 1e-5, fp16 (Compression.fp16, ordo's fp16 wire) those of the same
    SGD with the wire's rounding."""
    if fp16 and _codecs():
        pytest.skip(_codecs())
    out = launch(tmp_path, port(tmp_path, script), *BENCH, *(["--fp16-allreduce"] if fp16
                                                              else []))
    assert f"Model: {MODEL}" in out and "Number of CPUs: 2" in out, out
    assert re.search(r"Total img/sec on 2 CPU\(s\): [0-9.]+ \+-[0-9.]+", out), out
    ranks = [torch.load(tmp_path / f"rank{r}.pt", weights_only=False) for r in range(2)]
    want = _bench_reference(ranks, fp16)
    for r in range(2):
        for i, (got, w) in enumerate(zip(ranks[r]["params"], want, strict=True)):
            err = (got - w).abs().max().item()
            torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-5,
                                       msg=f"rank {r} parameter {i}: {err:.3g} off")


def test_synthetic_benchmark(tmp_path: Path):
    """Horovod's pytorch_synthetic_benchmark.py (with --fp16-allreduce, and the elastic one,
    in test_horovod_examples_long.py)."""
    run_benchmark(tmp_path, "pytorch_synthetic_benchmark.py", False)


def _idx(path: Path, data: torch.Tensor) -> None:
    """_idx writes data (uint8) as an IDX file (images: n x 28 x 28; labels: n)."""
    dims = list(data.shape)
    head = bytes([0, 0, 8, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)
    path.write_bytes(head + data.contiguous().numpy().tobytes())


def _read_idx(path: Path, count: int) -> torch.Tensor:
    with gzip.open(path) as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    dims[0] = min(dims[0], count)
    n = 1
    for d in dims:
        n *= d
    start = 4 + 4 * ndim
    return torch.frombuffer(bytearray(raw[start:start + n]), dtype=torch.uint8).reshape(dims)


def mnist_folder(tmp: Path, train: int, test: int) -> tuple[Path, str]:
    """mnist_folder lays out train and test images as torchvision's MNIST reads them (DATA/
    MNIST/raw/*-ubyte): Fashion-MNIST's first ones, or a generated set without it."""
    raw = tmp / "data" / "MNIST" / "raw"
    raw.mkdir(parents=True)
    g = torch.Generator().manual_seed(3)
    for split, n in (("train", train), ("t10k", test)):
        src = FMNIST / f"{split}-images-idx3-ubyte.gz"
        if src.exists():
            images = _read_idx(src, n)
            labels = _read_idx(FMNIST / f"{split}-labels-idx1-ubyte.gz", n)
            what = "Fashion-MNIST"
        else:
            images = torch.randint(0, 256, (n, 28, 28), generator=g, dtype=torch.uint8)
            labels = torch.randint(0, 10, (n,), generator=g, dtype=torch.uint8)
            what = "a generated set"
        _idx(raw / f"{split}-images-idx3-ubyte", images)
        _idx(raw / f"{split}-labels-idx1-ubyte", labels)
    return tmp / "data", what


def _mnist_reference(script: Path, data: Path, steps: int, batch: int) -> list[torch.Tensor]:
    """The MNIST example's training, one process: each step the mean of both ranks'
    gradients on their DistributedSampler batches, with the dropout masks each rank draws
    (both ranks seed 42 and draw the same, so the RNG state is replayed for the second)."""
    torch.set_num_threads(1)
    ex = runpy.run_path(str(script), run_name="reference")  # Net, without running main
    tf = tv.transforms.Compose([tv.transforms.ToTensor(),
                                tv.transforms.Normalize((0.1307,), (0.3081,))])
    ds = tv.datasets.MNIST(str(data), train=True, transform=tf)
    batches = []
    for r in range(2):
        sampler = torch.utils.data.distributed.DistributedSampler(ds, num_replicas=2, rank=r)
        sampler.set_epoch(1)
        idx = list(sampler)
        batches.append([idx[i:i + batch] for i in range(0, len(idx), batch)])
    torch.manual_seed(42)
    model = ex["Net"]()
    torch.empty((), dtype=torch.int64).random_()  # the train loader's iterator draws its seed
    opt = torch.optim.SGD(model.parameters(), lr=0.01 * 2, momentum=0.5)
    params = list(model.parameters())
    model.train()
    for t in range(steps):
        state = torch.get_rng_state()
        grads = []
        for r in range(2):
            torch.set_rng_state(state)
            x = torch.stack([ds[i][0] for i in batches[r][t]])
            y = torch.tensor([ds[i][1] for i in batches[r][t]])
            opt.zero_grad()
            torch.nn.functional.nll_loss(model(x), y).backward()
            grads.append([p.grad.clone() for p in params])
        for p, g0, g1 in zip(params, *grads, strict=True):
            p.grad = (g0 + g1) / 2
        opt.step()
    return [p.detach() for p in params]


def test_mnist_example(tmp_path: Path):
    """Horovod's MNIST example, one epoch of 640 images (10 steps of 32 per worker), its test
    metrics averaged by hvd.allreduce: rank 0 prints them, and the parameters equal the
    single-process run within 1e-5."""
    data, what = mnist_folder(tmp_path, 640, 200)
    script = port(tmp_path, "pytorch_mnist.py")
    out = launch(tmp_path, script, "--epochs", "1", "--batch-size", "32",
                 "--test-batch-size", "100", "--no-cuda", "--log-interval", "5",
                 "--data-dir", str(data))
    assert re.search(r"Test set: Average loss: [0-9.]+, Accuracy: [0-9.]+%", out), out
    assert out.count("Train Epoch: 1 [") == 4, out  # batches 0 and 5 on each worker
    want = _mnist_reference(script, data, 10, 32)
    for r in range(2):
        got = torch.load(tmp_path / f"rank{r}.pt", weights_only=False)["params"]
        for i, (g, w) in enumerate(zip(got, want, strict=True)):
            torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5,
                                       msg=f"rank {r} parameter {i} ({what})")
