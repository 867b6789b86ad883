"""torch_worker.py: one worker of scripts/experiments/torch.sh (run by it, not by hand).

    torch_worker.py calibrate --model M --image PX      forward ms per sample, one process
    torch_worker.py forward   --model M --out DIR ...   ordo: ordered pulls + gated forward
    torch_worker.py train     --model M --out DIR ...   ordo.torch DistributedOptimizer
    torch_worker.py ddp       --model M --out DIR ...   torch DistributedDataParallel (gloo)

Models: `resnet18` (torchvision, random initialisation, 1-channel input, 10 classes), `vgg`
(VGG-style: conv 64, pool, conv 128, pool, conv 256 x 2, pool, conv 512 x 2, pool, fc 2048,
fc 2048, fc 10; --width scales every layer's width) on Fashion-MNIST images (resized to
--image pixels), and `transformer` (Encoder below: torch.nn.TransformerEncoder, 23.1 M
parameters, on synthetic tokens). Every run writes DIR/workerRANK.jsonl, one line per iteration:
{"worker", "iter", "warmup" (left out of the figures), "t_start_ns", "t_end_ns",
"step_ms", "samples"} (CLOCK_MONOTONIC, the same on
every process of the host and its network namespaces).

forward: the TicTac set-up. The worker declares the model's parameters (the servers keep them,
rank 0's values), profiles the model (every worker measures at once, so the profile carries
the same CPU sharing as the run; rank 0's is written to DIR/profile.json), re-plans with the
conf's [order] policy (Client.replan), then per iteration: a barrier, every parameter's pull
requested in plan order (policy none: a seeded random order per worker and iteration, as the
C workers do), and the forward pass, each module waiting only for its own parameters
(ordo.torch.profile.ForwardGate). The step is the barrier's end to the forward's end.

Time to accuracy (--target-acc A, train and ddp): every --eval-every steps each worker
evaluates its parameters (the same on every worker: bsp) on the first --eval-samples
Fashion-MNIST test images, and every worker stops at the first evaluation at or above A (or
after --warmup + --iterations steps), a decision every worker takes alike. DIR/ttaRANK.json
then holds {"target", "reached", "steps", "wall_s" (the first step's start to that
evaluation's end, evaluations included), "train_s" (evaluations left out), "accuracy",
"evals": [[step, acc, its wall s, this process's CPU s], ...]}.

train: hvd.DistributedOptimizer (--mode gradients or server, --plan: model= so the order is
planned from the model after 6 profiled steps); ddp: the same loop under DDP. The step is one
optimizer step (forward, backward, the transfers, the update); its records also have
forward_ms (server mode, planned: with the waits for the module's parameters), backward_ms
and step_wait_ms (opt.step(): the wait for the transfers, and the local update).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "examples" / "torch"))


def now_ns() -> int:
    return time.clock_gettime_ns(time.CLOCK_MONOTONIC)


def make_model(name: str, width: float, init: str = "default") -> nn.Module:
    """make_model builds the experiment's model (seeded: every worker starts alike); init "he"
    re-draws every conv and linear weight by He's rule for ReLU (normal, fan in) with zero
    biases, which lets SGD train the VGG-style net, having no batch norm, from the start."""
    net = _make_model(name, width)
    if init == "he":
        for m in net.modules():
            if isinstance(m, (nn.Conv2d, nn.Linear)):
                nn.init.kaiming_normal_(m.weight, nonlinearity="relu")
                nn.init.zeros_(m.bias)
    return net


def _make_model(name: str, width: float) -> nn.Module:
    torch.manual_seed(1)
    if name == "resnet18":
        import torchvision
        net = torchvision.models.resnet18(weights=None, num_classes=10)
        net.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
        return net
    if name == "vgg":
        def w(c: int) -> int:
            return max(4, int(c * width))
        layers: list[nn.Module] = []
        cin = 1
        for c in (64, "M", 128, "M", 256, 256, "M", 512, 512, "M"):
            if c == "M":
                layers.append(nn.MaxPool2d(2))
            else:
                layers += [nn.Conv2d(cin, w(c), 3, padding=1), nn.ReLU(inplace=True)]
                cin = w(c)
        return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(cin, w(2048)), nn.ReLU(inplace=True),
                             nn.Linear(w(2048), w(2048)), nn.ReLU(inplace=True),
                             nn.Linear(w(2048), 10))
    if name == "transformer":
        return Encoder()
    raise SystemExit(f"torch_worker: unknown model {name!r} (resnet18, vgg, transformer)")


SEQ, VOCAB = 64, 8192


class Encoder(nn.Module):
    """Encoder: a token classifier on torch.nn.TransformerEncoder (6 layers, d 512, 8 heads,
    feed-forward 2048: 23.1 M parameters with the embedding), inputs SEQ tokens of VOCAB."""

    def __init__(self, d: int = 512, layers: int = 6):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, d)
        self.pos = nn.Parameter(torch.zeros(SEQ, d))
        layer = nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.enc(self.emb(x) + self.pos).mean(1))


def batches(model: str, image: int, batch: int, rank: int, size: int, synthetic: bool):
    """batches yields this worker's (x, y) batches of Fashion-MNIST forever (synthetic data
    when asked or when the data set is missing)."""
    x = y = None
    if model == "transformer":  # synthetic tokens, seeded per worker
        g = torch.Generator().manual_seed(rank)
        while True:
            yield torch.randint(0, VOCAB, (batch, SEQ), generator=g), \
                torch.randint(0, 10, (batch,), generator=g)
    if not synthetic:
        try:
            import fmnist
            x, y = fmnist.load("train")
        except (FileNotFoundError, ImportError):
            x = None
    if x is None:
        g = torch.Generator().manual_seed(rank)
        x, y = torch.randn(batch * 8, 1, 28, 28, generator=g), torch.randint(0, 10, (batch * 8,),
                                                                               generator=g)
    mine = torch.arange(rank, len(x), size)
    s = 0
    while True:
        if (s + 1) * batch > len(mine):
            s = 0
        idx = mine[s * batch:(s + 1) * batch]
        xb = x[idx]
        if image != 28:
            xb = F.interpolate(xb, size=(image, image), mode="bilinear", align_corners=False)
        yield xb.contiguous(), y[idx]
        s += 1


class Log:
    """Log writes one worker's per-iteration records."""

    def __init__(self, out: str, rank: int, warmup: int):
        os.makedirs(out, exist_ok=True)
        self.warmup = warmup
        self.f = open(os.path.join(out, f"worker{rank}.jsonl"), "w")  # noqa: SIM115 (the run)
        self.rank = rank

    def add(self, it: int, t0: int, t1: int, samples: int, **extra) -> None:
        rec = {"worker": self.rank, "iter": it, "warmup": it < self.warmup, "t_start_ns": t0,
               "t_end_ns": t1, "step_ms": round((t1 - t0) / 1e6, 4), "samples": samples,
               **extra}
        self.f.write(json.dumps(rec) + "\n")
        self.f.flush()


def calibrate(a: argparse.Namespace) -> int:
    net = make_model(a.model, a.width).eval()
    x, _ = next(batches(a.model, a.image, a.batch, 0, 1, True))
    with torch.no_grad():
        net(x)
        t = time.perf_counter()
        for _ in range(3):
            net(x)
    ms = (time.perf_counter() - t) / 3 * 1e3
    n = sum(p.numel() for p in net.parameters())
    print(json.dumps({"model": a.model, "fwd_ms_per_sample": ms / a.batch, "params": n,
                      "bytes": 4 * n, "tensors": len(list(net.parameters()))}))
    return 0


def forward(a: argparse.Namespace) -> int:
    import ordo
    from ordo.torch import profile
    client = ordo.Client(os.environ.get("ORDO_CONF") or None)
    net = make_model(a.model, a.width)
    named = [(n, p) for n, p in net.named_parameters()]
    index = {n: client.declare(n, p.numel()) for n, p in named}
    for i in index.values():
        client.declare_update(i, "sgd", 0.0, 0.0, 0.0)  # the servers keep the values
    client.join()
    rank, size = client.rank, client.size
    if rank == 0:
        for n, p in named:
            client.init(index[n], p.data)
    data = batches(a.model, a.image, a.batch, rank, size, a.synthetic)
    x, _ = next(data)
    # every worker profiles at once (the same CPU sharing as the run); rank 0's is the plan's
    path = os.path.join(a.out, "profile.json" if rank == 0 else f"profile{rank}.json")
    doc = profile.export_profile(net, x, path, iterations=3)
    policy = a.policy
    prios = client.replan(doc if rank == 0 else None, 600_000)
    if rank == 0:
        with open(os.path.join(a.out, "priorities.json"), "w") as f:
            json.dump({n: prios[index[n]] for n, _ in named}, f)
    net.eval()
    handles: dict[int, ordo.Handle] = {}

    def wait(tensors: list[int]) -> None:
        for i in tensors:
            h = handles.pop(i, None)
            if h is not None:
                h.wait()

    gate = profile.ForwardGate(net, {p: index[n] for n, p in named}, wait)
    log = Log(a.out, rank, a.warmup)
    order = sorted(named, key=lambda np_: (prios[index[np_[0]]], index[np_[0]]))
    for it in range(a.warmup + a.iterations):
        x, _ = next(data)
        client.barrier(600_000)
        t0 = now_ns()
        if policy == "none":  # a random order of requests, per worker and iteration
            reqs = list(order)
            random.Random(1000003 * (it + 1) + rank).shuffle(reqs)
            for n, p in reqs:
                handles[index[n]] = client.pull(index[n], p.data, 0)
        else:
            for n, p in order:
                handles[index[n]] = client.pull(index[n], p.data, prios[index[n]])
        with torch.no_grad():
            net(x)
        t_fwd = now_ns()
        wait(list(handles))
        t1 = now_ns()
        log.add(it, t0, t1, a.batch, forward_ms=round((t_fwd - t0) / 1e6, 4))
    gate.remove()
    client.barrier(600_000)
    client.leave()
    return 0


def make_optimizer(a: argparse.Namespace, net: nn.Module) -> torch.optim.Optimizer:
    """make_optimizer: SGD (lr --lr, momentum 0.9), the one update every setting can run
    (ordo's server mode and sparse path run it on the servers), or with --optimizer adam Adam
    (lr 1e-3; gradients mode and DDP only). With the default initialisation the VGG-style net,
    having no batch norm, stays at chance under SGD for hundreds of steps: --init he."""
    if a.optimizer == "adam":
        return torch.optim.Adam(net.parameters(), lr=1e-3)
    return torch.optim.SGD(net.parameters(), lr=a.lr, momentum=0.9)


def train(a: argparse.Namespace) -> int:
    import ordo.torch as hvd
    hvd.init()
    net = make_model(a.model, a.width, a.init)
    compression = hvd.Compression.oktopk() if a.compression == "oktopk" else None
    opt = hvd.DistributedOptimizer(make_optimizer(a, net), named_parameters=net.named_parameters(),
                                   mode=a.mode,
                                   model=net if a.plan else None, compression=compression)
    hvd.broadcast_parameters(net.state_dict(), root_rank=0)
    rank, size = hvd.rank(), hvd.size()
    rt = hvd._rt_or_raise()
    client = rt.client if rt.bound_model() else None
    return loop(a, net, opt, rank, size, hvd.shutdown,
                client.iter_bytes if client is not None else None)


def register_hook(net: nn.Module, hook: str) -> None:
    """register_hook gives DDP one of its compression hooks: bf16 or fp16 (the bucket divided by
    the world size, cast, all-reduced, cast back) or PowerSGD at rank 4 from step 10, with error
    feedback and warm start, the settings PowerSGD's authors and PyTorch's docs recommend."""
    if hook == "none":
        return
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as psgd
    if hook == "bf16":
        net.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif hook == "fp16":
        net.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook == "powersgd":
        state = psgd.PowerSGDState(process_group=None, matrix_approximation_rank=4,
                                   start_powerSGD_iter=10, use_error_feedback=True,
                                   warm_start=True)
        net.register_comm_hook(state, psgd.powerSGD_hook)
    else:
        raise ValueError(f"torch_worker: unknown DDP hook {hook!r}")


def ddp(a: argparse.Namespace) -> int:
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=size)
    net = DistributedDataParallel(make_model(a.model, a.width, a.init),
                                  bucket_cap_mb=a.bucket_mb)
    register_hook(net, a.hook)
    opt = make_optimizer(a, net)
    return loop(a, net, opt, rank, size, dist.destroy_process_group)


def net_counters() -> dict[str, int]:
    """net_counters sums the bytes sent and received by this network namespace's interfaces
    (lo left out) as the kernel counts them: torch.sh gives every host a namespace."""
    tx = rx = 0
    for dev in Path("/sys/class/net").iterdir():
        if dev.name == "lo":
            continue
        tx += int((dev / "statistics" / "tx_bytes").read_text())
        rx += int((dev / "statistics" / "rx_bytes").read_text())
    return {"tx_bytes": tx, "rx_bytes": rx}


class Target:
    """Target is the time-to-accuracy mode (--target-acc): the test images, the evaluations
    and the decision to stop, the same on every worker (their parameters are equal)."""

    def __init__(self, a: argparse.Namespace, out: str, rank: int):
        import fmnist
        x, y = fmnist.load("t10k")
        self.x, self.y = x[:a.eval_samples], y[:a.eval_samples]
        if a.image != 28:
            self.x = F.interpolate(self.x, size=(a.image, a.image), mode="bilinear",
                                   align_corners=False)
        self.a, self.path = a, os.path.join(out, f"tta{rank}.json")
        self.t0 = now_ns()
        self.eval_ns = 0
        self.evals: list[list[float]] = []

    def accuracy(self, net: nn.Module) -> float:
        net.eval()
        right = 0
        with torch.no_grad():
            for i in range(0, len(self.x), 500):
                right += int((net(self.x[i:i + 500]).argmax(1) == self.y[i:i + 500]).sum())
        net.train()
        return right / len(self.x)

    def reached(self, net: nn.Module, steps: int, last: bool) -> bool:
        """reached evaluates after `steps` steps when it is time (always when last) and tells
        whether the run stops here; the stopping evaluation writes ttaRANK.json."""
        a = self.a
        if steps % a.eval_every and not last:
            return False
        t, c = now_ns(), time.process_time()
        acc = self.accuracy(net)
        self.eval_ns += now_ns() - t
        self.evals.append([steps, round(acc, 4), round((now_ns() - t) / 1e9, 3),
                           round(time.process_time() - c, 3)])
        hit = acc >= a.target_acc
        if hit or last:
            wall = (now_ns() - self.t0) / 1e9
            with open(self.path, "w") as f:
                json.dump({"target": a.target_acc, "reached": hit, "steps": steps,
                           "wall_s": round(wall, 3),
                           "train_s": round(wall - self.eval_ns / 1e9, 3),
                           "accuracy": acc, "evals": self.evals}, f)
            return True
        return False


def loop(a: argparse.Namespace, net: nn.Module, opt: torch.optim.Optimizer, rank: int,
         size: int, done, iter_bytes=None) -> int:
    """loop trains; over the measured iterations it also writes DIR/netRANK.json: this host's
    interface bytes (net_counters; every worker of a host counts the same host) and, in host
    groups, the payload bytes ordo's path counted for this worker (ordo_iter_bytes: the bytes
    since its last call)."""
    data = batches(a.model, a.image, a.batch, rank, size, a.synthetic)
    log = Log(a.out, rank, a.warmup)
    loss_fn = nn.CrossEntropyLoss()
    net.train()
    c0 = None
    ordo_bytes = [0, 0]
    target = Target(a, a.out, rank) if a.target_acc > 0 else None
    ran = 0
    for it in range(a.warmup + a.iterations):
        x, y = next(data)
        if it == 0 and target is not None:  # the clock starts with the first step, the data
            target.t0 = now_ns()              # set read (tens of MB, seconds on a busy host)
        ran = it + 1 - a.warmup
        if it == a.warmup:
            c0 = net_counters()
            if iter_bytes is not None:
                iter_bytes()  # its counts are since the last call: start the window here
        t0 = now_ns()
        opt.zero_grad()
        loss = loss_fn(net(x), y)
        t_fwd = now_ns()
        loss.backward()
        t_bwd = now_ns()
        opt.step()
        t1 = now_ns()
        log.add(it, t0, t1, a.batch, loss=round(loss.item(), 5),
                forward_ms=round((t_fwd - t0) / 1e6, 4),
                backward_ms=round((t_bwd - t_fwd) / 1e6, 4),
                step_wait_ms=round((t1 - t_bwd) / 1e6, 4))
        if iter_bytes is not None and it >= a.warmup:
            pushed, pulled = iter_bytes()
            ordo_bytes[0] += pushed
            ordo_bytes[1] += pulled
        if target is not None and target.reached(net, it + 1,
                                                 it + 1 == a.warmup + a.iterations):
            break
    c1 = net_counters()
    if c0 is not None:
        doc = {"worker": rank, "host": rank // int(os.environ.get("ORDO_LOCAL_SIZE", "1")),
               "iterations": ran,
               "model_bytes": 4 * sum(p.numel() for p in net.parameters()),
               "tx_bytes": c1["tx_bytes"] - c0["tx_bytes"],
               "rx_bytes": c1["rx_bytes"] - c0["rx_bytes"]}
        if iter_bytes is not None:
            doc.update(ordo_pushed_bytes=ordo_bytes[0], ordo_pulled_bytes=ordo_bytes[1])
        with open(os.path.join(a.out, f"net{rank}.json"), "w") as f:
            json.dump(doc, f)
    done()
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["calibrate", "forward", "train", "ddp"])
    ap.add_argument("--model", default="resnet18")
    ap.add_argument("--width", type=float, default=1.0, help="vgg: layer width factor")
    ap.add_argument("--image", type=int, default=28, help="image side in pixels")
    ap.add_argument("--batch", type=int, default=32, help="per worker")
    ap.add_argument("--iterations", type=int, default=5, help="measured iterations")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--policy", default="tao", help="forward: the conf's [order] policy")
    ap.add_argument("--mode", choices=["gradients", "server"], default="gradients")
    ap.add_argument("--plan", action="store_true", help="train: model= (planned order)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--bucket-mb", type=float, default=25, help="ddp: bucket_cap_mb")
    ap.add_argument("--hook", default="none", choices=["none", "bf16", "fp16", "powersgd"],
                    help="ddp: a compression comm hook")
    ap.add_argument("--synthetic", action="store_true", help="random inputs, no data set")
    ap.add_argument("--target-acc", type=float, default=0.0,
                    help="train, ddp: stop at this test accuracy (time to accuracy)")
    ap.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd",
                    help="train, ddp: SGD lr 0.01 momentum 0.9, or Adam lr 1e-3")
    ap.add_argument("--lr", type=float, default=0.01, help="train, ddp: SGD's learning rate")
    ap.add_argument("--init", choices=["default", "he"], default="default",
                    help="train, ddp: the model's initialisation (he: He's, for SGD)")
    ap.add_argument("--compression", choices=["none", "oktopk"], default="none",
                    help="train: DistributedOptimizer(compression=Compression.oktopk()) (the "
                         "conf's [push] mode = sparse; server mode)")
    ap.add_argument("--eval-every", type=int, default=25, help="--target-acc: steps")
    ap.add_argument("--eval-samples", type=int, default=2000, help="--target-acc: images")
    ap.add_argument("--out", default=".")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    return {"calibrate": calibrate, "forward": forward, "train": train, "ddp": ddp}[a.what](a)


if __name__ == "__main__":
    sys.exit(main())
