"""staging: CUDA tensors cross to ordo through pinned host buffers on a side stream.

ordo moves host memory. A CUDA gradient is copied device-to-host on a side stream the moment
autograd has it (the copy waits for the kernels that made it, then overlaps the rest of the
backward pass); its push is issued once the copy has finished, which the optimizer checks at
each later hook without blocking, and at the latest when it waits for the results. A pulled
value goes host-to-device on the same side stream, and the compute stream waits for that copy
only (an event), so the host never blocks on it.

Lifetimes: a gradient read by the side stream is marked used there (record_stream), so the
caching allocator does not hand its memory out before the copy ran. A pinned buffer is reused
only after the transfer that read or wrote it completed: the optimizer waits for every
transfer of a step before the next step's gradients are staged, and a host-to-device copy out
of a receive buffer is ordered (on the GPU) before the next backward pass whose gradient must
be staged, and pushed, before that buffer is written again.
"""
from __future__ import annotations

from typing import Any

import torch


class CudaStaging:
    """CudaStaging owns the side streams (one per device) and the gradients whose copies to
    host memory are in flight, in the order they were staged."""

    def __init__(self) -> None:
        self._streams: dict[torch.device, torch.cuda.Stream] = {}
        self._pending: list[tuple[Any, torch.cuda.Event]] = []

    def _stream(self, device: torch.device) -> torch.cuda.Stream:
        s = self._streams.get(device)
        if s is None:
            s = torch.cuda.Stream(device=device)
            self._streams[device] = s
        return s

    def to_host(self, item: Any, src: torch.Tensor, host: torch.Tensor) -> None:
        """to_host starts copying src (a CUDA tensor) into the pinned host buffer on the
        side stream, after the work already queued on the current stream; item comes back
        from ready() once the copy has finished."""
        side = self._stream(src.device)
        made = torch.cuda.Event()
        made.record(torch.cuda.current_stream(src.device))
        with torch.cuda.stream(side):
            side.wait_event(made)
            host.copy_(src, non_blocking=True)
            src.record_stream(side)
            copied = torch.cuda.Event()
            copied.record(side)
        self._pending.append((item, copied))

    def ready(self, block: bool) -> list[Any]:
        """ready returns, in staging order, the items whose copies have finished and forgets
        them; with block, it waits for every copy in flight first."""
        out = []
        while self._pending:
            item, copied = self._pending[0]
            if block:
                copied.synchronize()
            elif not copied.query():
                break
            out.append(item)
            self._pending.pop(0)
        return out

    def to_device(self, dst: torch.Tensor, host: torch.Tensor) -> None:
        """to_device copies the pinned host buffer into dst (a CUDA tensor) on the side stream;
        work queued on dst's current stream from now on runs after the copy."""
        side = self._stream(dst.device)
        current = torch.cuda.current_stream(dst.device)
        with torch.cuda.stream(side):
            side.wait_stream(current)  # what used dst before is done with it
            dst.copy_(host, non_blocking=True)
            copied = torch.cuda.Event()
            copied.record(side)
        current.wait_event(copied)
