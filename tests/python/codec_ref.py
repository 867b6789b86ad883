"""codec_ref: a numpy reference of ordo's wire codecs (common/codec*.c) and their error feedback.

It writes the same frames as the C, bit for bit, in float32 arithmetic where the C uses float:
bf16 (round to nearest even, a NaN kept a NaN), fp16 (a float32 multiplier, then the halves
of x * scale; numpy's cast rounds to nearest even), onebit (the mean of |x| summed in double
in index order, then cast; one bit a value, set for a negative one, least significant first),
topk (the k largest magnitudes, a NaN counting as infinite, ties in index order) and randomk
(splitmix64 and selection sampling, as codec_sparse.c), the sparse frames being k uint32
indices then their k float32 values. ``encode_ef`` is the vanilla error-feedback decorator
(ordo__codec_encode_ef). The end-to-end replays reuse it: ``Codec(spec).encode_ef(...)``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

F32 = np.float32
GOLDEN = 0x9E3779B97F4A7C15
LOSSY = {"onebit", "topk", "randomk"}
NAMES = ("none", "bf16", "fp16", "onebit", "topk", "randomk")


class Overflow(Exception):
    """fp16: values that do not fit (the C's ORDO_ERR_RANGE); ``count`` says how many."""

    def __init__(self, count: int) -> None:
        super().__init__(f"{count} values do not fit in fp16")
        self.count = count


def k_of(k: float, n: int) -> int:
    """How many values topk and randomk keep of n (ordo__codec_k)."""
    if n <= 0:
        return 0
    kk = int(k) if k >= 1 else int(k * n + 0.5)
    return max(1, min(kk, n))


# ---- 16-bit casts --------------------------------------------------------------------------


def to_bf16(x: np.ndarray) -> np.ndarray:
    """The bf16 halves of float32 x: round to nearest even; a NaN stays a NaN (quiet bit)."""
    u = np.ascontiguousarray(x, dtype=F32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    return np.where(nan, (u >> 16) | 0x40, rounded).astype(np.uint16)


def from_bf16(h: np.ndarray) -> np.ndarray:
    return (np.asarray(h, dtype=np.uint16).astype(np.uint32) << 16).view(F32)


def to_fp16(x: np.ndarray, scale: float) -> tuple[np.ndarray, int]:
    """The halves of x * scale (float32 product) and how many do not fit (inf or NaN)."""
    with np.errstate(over="ignore", invalid="ignore"):
        h = (np.asarray(x, dtype=F32) * F32(scale)).astype(np.float16)
    return h.view(np.uint16), int(np.count_nonzero(~np.isfinite(h)))


def from_fp16(h: np.ndarray, mult: float) -> np.ndarray:
    return np.asarray(h, dtype=np.uint16).view(np.float16).astype(F32) * F32(mult)


# ---- randomk's generator -------------------------------------------------------------------


def _splitmix64(seed: int, count: int) -> np.ndarray:
    """The first count outputs of splitmix64 from state seed (each call adds GOLDEN first)."""
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + np.arange(1, count + 1, dtype=np.uint64) * np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def randomk_indices(n: int, k: int, seed: int) -> np.ndarray:
    """k of n indices, increasing: Knuth's selection sampling, u = top 53 bits / 2^53."""
    u = (_splitmix64(seed, n) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    out, m = [], 0
    for i in range(n):
        if m >= k:
            break
        if float(u[i]) * float(n - i) < float(k - m):
            out.append(i)
            m += 1
    return np.asarray(out, dtype=np.uint32)


def topk_indices(x: np.ndarray, k: int) -> np.ndarray:
    """The k largest magnitudes of x (NaN as infinite), ties in index order, increasing."""
    mag = np.abs(np.asarray(x, dtype=F32))
    mag[np.isnan(mag)] = np.inf
    order = np.lexsort((np.arange(mag.size), -mag))
    return np.sort(order[:k]).astype(np.uint32)


# ---- the codecs ----------------------------------------------------------------------------


@dataclass
class Codec:
    """A compression spec as ordo__codec_parse reads it ("topk:0.01,ef=none")."""

    spec: str
    scale: float = 0.0  # fp16: values are multiplied by this before the cast; 0 means 1
    name: str = field(init=False)
    k: float = field(init=False, default=0.0)
    ef: bool = field(init=False)

    def __post_init__(self) -> None:
        head, _, opt = self.spec.partition(",")
        self.name, _, karg = head.partition(":")
        if self.name not in NAMES:
            raise ValueError(f"unknown codec {self.name!r}")
        if karg:
            self.k = float(karg)
        self.ef = {"": self.name in LOSSY, "ef=vanilla": True, "ef=none": False}[opt]

    def encode(self, x: np.ndarray, seed: int = 0) -> bytes:
        """The frame of float32 x; Overflow for fp16 values that do not fit."""
        x = np.ascontiguousarray(x, dtype=F32)
        n = x.size
        if self.name == "none":
            return x.tobytes()
        if self.name == "bf16":
            return to_bf16(x).tobytes()
        if self.name == "fp16":
            s = F32(self.scale if self.scale > 0 else 1.0)
            h, bad = to_fp16(x, float(s))
            if bad:
                raise Overflow(bad)
            return (F32(1.0) / s).tobytes() + h.tobytes()
        if self.name == "onebit":
            # the C sums |x| in double, in index order (cumsum is sequential), then casts
            l1 = float(np.cumsum(np.abs(x).astype(np.float64))[-1]) if n else 0.0
            s = F32(l1 / n) if n else F32(0.0)
            if not np.isfinite(s):
                raise ValueError("onebit: a value is not finite")
            bits = np.packbits(np.signbit(x), bitorder="little")
            return s.tobytes() + bits.tobytes()
        k = k_of(self.k, n)
        idx = topk_indices(x, k) if self.name == "topk" else randomk_indices(n, k, seed)
        return idx.tobytes() + x[idx].tobytes()

    def decode(self, frame: bytes, n: int) -> np.ndarray:
        """The n float32 values frame stands for."""
        if self.name == "none":
            return np.frombuffer(frame, dtype=F32).copy()
        if self.name == "bf16":
            return from_bf16(np.frombuffer(frame, dtype=np.uint16))
        if self.name == "fp16":
            mult = np.frombuffer(frame[:4], dtype=F32)[0]
            return from_fp16(np.frombuffer(frame[4:], dtype=np.uint16), float(mult))
        if self.name == "onebit":
            s = np.frombuffer(frame[:4], dtype=F32)[0]
            neg = np.unpackbits(np.frombuffer(frame[4:], dtype=np.uint8), bitorder="little")
            return np.where(neg[:n].astype(bool), -s, s).astype(F32)
        k = len(frame) // 8
        out = np.zeros(n, dtype=F32)
        idx = np.frombuffer(frame[: 4 * k], dtype=np.uint32)
        out[idx] = np.frombuffer(frame[4 * k :], dtype=F32)
        return out

    def encode_ef(
        self, x: np.ndarray, residual: np.ndarray, seed: int = 0
    ) -> tuple[bytes, np.ndarray, np.ndarray]:
        """One step under error feedback: (frame, decoded, new residual). With ef off, or
        when fp16 overflows (Overflow raised), the residual is as it was."""
        x = np.ascontiguousarray(x, dtype=F32)
        if not self.ef:
            frame = self.encode(x, seed)
            return frame, self.decode(frame, x.size), residual
        scratch = x + np.asarray(residual, dtype=F32)
        frame = self.encode(scratch, seed)
        decoded = self.decode(frame, x.size)
        return frame, decoded, scratch - decoded
