"""wire_ref: numpy replays of ordo's wire codecs (common/codec.h), bit for bit, for the tests
that check a compressed run against a single-process replay: what a worker sends (encode with
error feedback) and what a server or a worker makes of it (decode), in float32 where the C
computes in float32."""
from __future__ import annotations

import numpy as np

M64 = (1 << 64) - 1


def parse(spec: str) -> tuple[str, float, bool]:
    """parse splits "topk:0.1,ef=none" into (name, k, ef) with ordo's defaults."""
    head, _, opt = spec.partition(",")
    name, _, k = head.partition(":")
    ef = name in ("onebit", "topk", "randomk")
    if opt:
        ef = opt == "ef=vanilla"
    return name, float(k) if k else 0.0, ef


def count_k(k: float, n: int) -> int:
    """count_k is ordo__codec_k: a count, or a fraction of n rounded, within [1, n]."""
    c = int(k) if k >= 1 else int(k * n + 0.5)
    return max(1, min(n, c))


def bf16(x: np.ndarray) -> np.ndarray:
    """bf16 rounds float32 values to bfloat16 (nearest even) and back to float32."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    return (r.astype(np.uint32) << 16).view(np.float32)


def _splitmix(state: int) -> tuple[int, int]:
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def randomk_indices(n: int, k: int, seed: int) -> np.ndarray:
    """randomk_indices is codec_sparse.c's selection sampling with splitmix64."""
    out, s, m = [], seed & M64, 0
    for i in range(n):
        if m >= k:
            break
        s, z = _splitmix(s)
        u = float(z >> 11) * 2.0 ** -53
        if u * (n - i) < k - m:
            out.append(i)
            m += 1
    return np.array(out, dtype=np.int64)


def roundtrip(spec: str, x: np.ndarray, workers: int, seed: int) -> np.ndarray:
    """roundtrip is what the receiver decodes of x sent with the codec of spec (no error
    feedback): the values of its frame, as float32."""
    name, k, _ = parse(spec)
    x = x.astype(np.float32)
    n = x.size
    if name == "none":
        return x.copy()
    if name == "bf16":
        return bf16(x)
    if name == "fp16":
        scale = np.float32(1.0) / np.float32(workers)
        mult = np.float32(1.0) / scale
        return (x * scale).astype(np.float16).astype(np.float32) * mult
    if name == "onebit":
        l1 = np.cumsum(np.abs(x).astype(np.float64))[-1]  # a sequential double sum, as the C
        s = np.float32(l1 / n)
        return np.where(np.signbit(x), -s, s).astype(np.float32)
    out = np.zeros(n, dtype=np.float32)
    kk = count_k(k, n)
    if name == "topk":
        order = np.lexsort((np.arange(n), -np.abs(x)))  # by magnitude, ties by index
        idx = np.sort(order[:kk])
    elif name == "randomk":
        idx = randomk_indices(n, kk, seed)
    else:
        raise ValueError(f"wire_ref: unknown codec {name!r}")
    out[idx] = x[idx]
    return out


class Sender:
    """Sender replays one worker's pushes of one tensor slice: encode with error feedback."""

    def __init__(self, spec: str, n: int, workers: int):
        self.spec, self.workers = spec, workers
        self.ef = parse(spec)[2]
        self.residual = np.zeros(n, dtype=np.float32)

    def send(self, g: np.ndarray, seed: int) -> np.ndarray:
        """send returns what the server decodes of gradient g pushed at step seed."""
        src = g.astype(np.float32) + self.residual if self.ef else g.astype(np.float32)
        got = roundtrip(self.spec, src, self.workers, seed)
        if self.ef:
            self.residual = src - got
        return got


def pulled(spec: str, value: np.ndarray) -> np.ndarray:
    """pulled is what a worker reads of a value pulled with its tensor's codec: 16-bit casts
    round it once (fp16 unscaled), lossy codecs' pulls are float32."""
    name = parse(spec)[0]
    if name == "bf16":
        return bf16(value)
    if name == "fp16":
        return value.astype(np.float32).astype(np.float16).astype(np.float32)
    return value.astype(np.float32).copy()
