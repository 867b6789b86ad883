"""ddp: a communication hook for torch.nn.parallel.DistributedDataParallel that moves DDP's
gradient buckets through ordo's servers in place of its allreduce.

    model = DistributedDataParallel(model)
    model.register_comm_hook(None, ordo.torch.ddp_comm_hook)

An ordo cluster's tensors are fixed when the workers join, while DDP shows its buckets one at
a time during a backward pass. So the first backward pass learns them: the hook holds each
bucket's Future until the last bucket (GradBucket.is_last()) is seen, then declares the
parameters of every bucket, in forward order (the last bucket's last parameter first), joins,
and transfers them all. Each parameter's gradient, a slice of the bucket's flat buffer (no
copy), travels as its own tensor, averaged by the servers (ORDO_UPDATE_AVERAGE) and with its
priority in the cluster's plan; DDP's re-bucketing after the first iteration therefore
changes nothing for ordo. The Future's value is the bucket's mean over the workers, as DDP's
default allreduce hook gives.

One thread of the hook's own makes every ordo call (a Client has one driver at a time): the
hook only queues the bucket, so the backward pass goes on while the transfers run.

(No `from __future__ import annotations` here: DDP checks the hook's annotations against the
classes themselves.)
"""
import atexit
import collections
import queue
import threading
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.distributed as dist

from ordo.client import Handle, Timeout
from ordo.torch import compression as cp
from ordo.torch import runtime as rt

POLL_MS = 2  # how long the hook's thread waits on one transfer before it looks for new buckets


@dataclass
class Bucket:
    """Bucket is one DDP bucket of one iteration: its flat gradients, its parameters (data
    pointer and size, in the buffer's order), and the Future DDP waits on."""
    index: int
    buffer: torch.Tensor  # the gradients (staged on the CPU when DDP's are on a GPU)
    params: list[tuple[int, int]]
    future: torch.futures.Future
    device: torch.device
    result: torch.Tensor | None = None
    handles: list[Handle] = field(default_factory=list)


class CommHook:
    """CommHook is the state of ddp_comm_hook in this process: the parameters declared from
    the first iteration's buckets, and the thread that runs the transfers."""

    def __init__(self, codec: str = "none") -> None:
        self.codec = codec  # the wire codec of every gradient (ddp_comm_hook's state)
        self.first: list[Bucket] = []  # the first iteration's buckets, until the last one
        self.learned = False            # the buckets are known (the join is queued)
        self.keys: dict[int, tuple[int, int]] = {}  # parameter data pointer -> tensor, priority
        self.queue: queue.Queue[Any] = queue.Queue()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._loop, name="ordo-ddp", daemon=True)
        self.thread.start()

    # ---- the hook (DDP's autograd thread) -------------------------------------------------

    def __call__(self, bucket: dist.GradBucket) -> torch.futures.Future:
        """__call__ queues bucket's transfers and returns the Future of its mean."""
        if self.error is not None:
            raise RuntimeError(f"ordo.torch.ddp_comm_hook: an earlier transfer failed: "
                               f"{self.error}") from self.error
        buf = bucket.buffer()
        rt.check_tensor(buf, f"DDP bucket {bucket.index()}")
        params = [(p.data_ptr(), p.numel()) for p in bucket.parameters()]
        if sum(n for _, n in params) != buf.numel():
            raise ValueError(f"ordo.torch.ddp_comm_hook: bucket {bucket.index()} holds "
                             f"{buf.numel()} values, its parameters {sum(n for _, n in params)}")
        b = Bucket(bucket.index(), buf.detach().cpu(), params, torch.futures.Future(),
                   buf.device)
        if self.learned:
            self.queue.put(b)
        else:
            self.first.append(b)
            if bucket.is_last():
                self.learned = True
                self.queue.put(("join", self.first))
                self.first = []
        return b.future

    def stop(self) -> None:
        """stop ends the hook's thread once the transfers queued before are done."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    # ---- the hook's thread: every ordo call ------------------------------------------------

    def _declare(self, r: rt.Runtime, buckets: list[Bucket]) -> None:
        """_declare declares every parameter of buckets (forward order) and joins."""
        if r.joined:
            raise RuntimeError("ordo.torch.ddp_comm_hook: the cluster was joined before DDP's "
                               "first backward pass; the hook declares the gradients, so make "
                               "no other transfer (push_pull, broadcast) before it")
        order = [p for b in sorted(buckets, key=lambda b: -b.index) for p in reversed(b.params)]
        index = {}
        for k, (ptr, numel) in enumerate(order):
            index[ptr] = r.declare(f"ddp.{k}", numel, rt.AVERAGE, every_step=True,
                                   codec=self.codec).index
        r.join()
        self.keys = {ptr: (i, r.client.priority(i)) for ptr, i in index.items()}

    def _start(self, r: rt.Runtime, b: Bucket) -> None:
        """_start pushes b's gradients and pulls their means into b.result."""
        b.result = torch.empty_like(b.buffer)
        off = 0
        for ptr, numel in b.params:
            key = self.keys.get(ptr)
            if key is None:
                raise RuntimeError("ordo.torch.ddp_comm_hook: a parameter DDP did not show in "
                                   "the first iteration (its tensors are fixed at the join)")
            src, dst = b.buffer[off:off + numel], b.result[off:off + numel]
            b.handles.append(r.client.pushpull(key[0], src, dst, key[1]))
            off += numel

    def _loop(self) -> None:
        inflight: collections.deque[Bucket] = collections.deque()
        while True:
            try:
                msg = self.queue.get(block=not inflight)
            except queue.Empty:
                msg = False
            try:
                if msg is None:
                    return
                if msg is not False:  # a new bucket (or the first iteration's, and the join)
                    r = _runtime()
                    if isinstance(msg, tuple):
                        self._declare(r, msg[1])
                        for b in sorted(msg[1], key=lambda b: b.index):
                            self._start(r, b)
                            inflight.append(b)
                    else:
                        self._start(r, msg)
                        inflight.append(msg)
                    continue
                b = inflight[0]
                while b.handles:
                    b.handles[0].wait(POLL_MS)
                    b.handles.pop(0)
                inflight.popleft()
                b.future.set_result(b.result.to(b.device))
            except Timeout:
                continue
            except BaseException as e:  # every waiting Future learns it, and DDP raises it
                self.error = e
                for b in inflight:
                    b.future.set_exception(e)
                inflight.clear()
                if isinstance(msg, Bucket):
                    msg.future.set_exception(e)
                elif isinstance(msg, tuple):
                    for b in msg[1]:
                        if not b.future.done():
                            b.future.set_exception(e)


_hook: CommHook | None = None
_lock = threading.Lock()
_at_exit = False  # _leave_at_exit is registered


def _runtime() -> rt.Runtime:
    import ordo.torch as ot

    if not ot.is_initialized():
        ot.init()
    return ot._rt_or_raise()


def _leave_at_exit() -> None:
    import ordo.torch as ot

    reset()
    ot.shutdown()


def reset() -> None:
    """reset stops the hook's thread (ordo.torch.shutdown calls it); a later hook call starts
    over with a new cluster."""
    global _hook
    with _lock:
        h, _hook = _hook, None
    if h is not None:
        h.stop()


def ddp_comm_hook(state: Any,
                  bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
    """ddp_comm_hook averages a DDP gradient bucket through ordo's servers; register it with
    model.register_comm_hook(None, ordo.torch.ddp_comm_hook).

    The first call makes this process a worker (ordo.torch.init() from the launcher's
    environment) when it is not one yet. The first backward pass declares the gradients and
    joins the cluster; the process leaves it at exit (or at ordo.torch.shutdown()).

    Args:
        state: DDP's hook state: None, or the wire codec of every gradient
            (ordo.torch.Compression.bf16, .fp16, ...: register_comm_hook(Compression.bf16,
            ordo.torch.ddp_comm_hook), as DDP's bf16_compress_hook; the servers sum float32).
        bucket: the bucket DDP hands over: float32 gradients, on the CPU or a CUDA device
            (staged through host memory).

    Returns:
        A Future whose value is the bucket's flat gradients averaged over the workers.

    Raises:
        RuntimeError: no cluster to join (not started by ordo-launch), the cluster joined
            before the first backward pass, a parameter the first iteration did not show, or
            an earlier transfer failed (the Futures carry the transfer's OrdoError).
        TypeError: gradients that are not float32.
    """
    global _hook, _at_exit
    with _lock:
        if _hook is None:
            codec = cp.codec_of(state)
            if cp.oktopk_density(codec) is not False:
                raise ValueError("ordo.torch.ddp_comm_hook: Compression.oktopk is the sparse path "
                                 "of DistributedOptimizer(mode='server'); the hook averages "
                                 "gradients (pass none, fp16, bf16, onebit, topk or randomk)")
            r = _runtime()
            if codec != "none" and not hasattr(r.client, "declare_compression"):
                raise ValueError(f"ordo.torch.ddp_comm_hook: state {codec!r} needs libordo's "
                                 "wire codecs (Client.declare_compression)")
            _hook = CommHook(codec)
            if not _at_exit:
                atexit.register(_leave_at_exit)
                _at_exit = True
        h = _hook
    return h(bucket)
