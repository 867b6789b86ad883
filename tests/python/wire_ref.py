"""wire_ref: a cluster's compressed pushes and pulls replayed in one process, over the numpy
reference of the codecs (codec_ref.py): what each worker sends (its encoding with error
feedback; fp16 out of range goes as float32) and what it reads back (the 16-bit casts round
the value once; a lossy codec's pulls are the changes from the copy the servers track for
every worker, server/pull_codec.h). The tests that check a compressed run against a
single-process replay use it (compressed_worker.py)."""
from __future__ import annotations

import numpy as np
from codec_ref import LOSSY, Codec, Overflow

F32 = np.float32


class Sender:
    """Sender replays one worker's pushes of one slice: encode with error feedback."""

    def __init__(self, spec: str, n: int, workers: int):
        self.codec = Codec(spec, scale=float(F32(1.0) / F32(workers)))
        self.residual = np.zeros(n, dtype=F32)

    def send(self, g: np.ndarray, seed: int) -> np.ndarray:
        """send returns what the server decodes of gradient g pushed at step seed."""
        try:
            _, got, self.residual = self.codec.encode_ef(g, self.residual, seed)
        except Overflow:  # fp16 out of range: the message goes as float32
            return g.astype(F32).copy()
        return got


class Puller:
    """Puller replays what a worker reads of one slice's pulls under spec: the 16-bit casts
    round each value once (fp16 unscaled; out of range: float32); a lossy codec's first answer
    is the value itself, each later one the copy plus the decoded encoding of (value - copy),
    topk and randomk keeping the top-k of the change, as many values as their pushes keep."""

    def __init__(self, spec: str, n: int):
        self.codec = Codec(spec)
        self.n = n
        self.copy: np.ndarray | None = None

    def pull(self, value: np.ndarray, it: int) -> np.ndarray:
        value = value.astype(F32)
        c = self.codec
        if c.name not in LOSSY:
            try:
                return c.decode(c.encode(value), self.n)
            except Overflow:
                return value.copy()
        if self.copy is None:
            self.copy = value.copy()
            return self.copy.copy()
        change = Codec("onebit" if c.name == "onebit" else f"topk:{c.k}")
        got = change.decode(change.encode(value - self.copy, it), self.n)
        self.copy = self.copy + got
        return self.copy.copy()
