"""compression: Horovod's Compression names for ordo.torch, as ordo's wire codecs.

Horovod compresses a gradient in Python before its allreduce; ordo compresses on the wire,
per tensor, in libordo ([docs/torch.md](../../../docs/torch.md#compression)): the servers sum
float32 whatever the wire carries. So a Compression here is a codec name that
DistributedOptimizer(..., compression=) declares for each parameter's tensor before the join
(Client.declare_compression); its compress/decompress are the identity, for code that calls
them by hand as Horovod's Compressor allows.
"""
from __future__ import annotations

from typing import Any

import torch


class Compressor:
    """Compressor is one wire codec: codec is its spec string ("none", "fp16", "bf16",
    "onebit", "topk:K", "randomk:K"). compress and decompress are the identity (the library
    encodes on the wire), kept for Horovod's interface."""

    codec = "none"

    def __init__(self, codec: str | None = None):
        if codec is not None:
            self.codec = codec

    @staticmethod
    def compress(tensor: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """compress returns tensor and no context: ordo encodes on the wire."""
        return tensor, None

    @staticmethod
    def decompress(tensor: torch.Tensor, ctx: Any) -> torch.Tensor:
        """decompress returns tensor: ordo decodes on the wire."""
        return tensor

    def __repr__(self) -> str:
        return f"Compression({self.codec!r})"


def _count(k: float) -> str:
    if isinstance(k, bool) or not isinstance(k, (int, float)) or k <= 0:
        raise ValueError(f"ordo.torch.Compression: k={k!r}; a count >= 1 or a fraction in (0, 1)")
    if isinstance(k, float) and k < 1:
        return repr(k)
    if float(k) != int(k):
        raise ValueError(f"ordo.torch.Compression: k={k!r}; a count >= 1 or a fraction in (0, 1)")
    return str(int(k))


class Compression:
    """Compression holds the codecs DistributedOptimizer(compression=) takes: Horovod's
    none and fp16, and ordo's bf16, onebit, topk(k) and randomk(k) (k a count >= 1 or a
    fraction < 1; error_feedback=False turns the residual off), and oktopk(density), the
    sparse path of the whole model."""

    none = Compressor("none")
    fp16 = Compressor("fp16")
    bf16 = Compressor("bf16")
    onebit = Compressor("onebit")

    @staticmethod
    def topk(k: float, error_feedback: bool = True) -> Compressor:
        """topk keeps each push's k largest values (k a count, or a fraction of the tensor)."""
        return Compressor(f"topk:{_count(k)}" + ("" if error_feedback else ",ef=none"))

    @staticmethod
    def randomk(k: float, error_feedback: bool = True) -> Compressor:
        """randomk keeps k values of each push chosen at random (a count or a fraction)."""
        return Compressor(f"randomk:{_count(k)}" + ("" if error_feedback else ",ef=none"))

    @staticmethod
    def oktopk(density: float | None = None) -> Compressor:
        """oktopk is Ok-Topk's sparse path, libordo's [push] mode = sparse (docs/sparse-live.md):
        each worker pushes the largest `density` fraction of its whole accumulated gradient
        (error feedback), the servers select a global top-k of the sums by a threshold the
        scheduler agrees, run SGD on it and answer with the entries that changed. The run's
        conf says [push] mode = sparse (the scheduler coordinates the selection); density
        None takes its push.density, a number must equal it. Server mode only."""
        if density is None:
            return Compressor(OKTOPK)
        if isinstance(density, bool) or not isinstance(density, (int, float)) or \
                not 0 < density <= 1:
            raise ValueError(f"ordo.torch.Compression.oktopk: density={density!r}; a fraction "
                             "of the model in (0, 1] (push.density)")
        return Compressor(f"{OKTOPK}:{float(density)!r}")


OKTOPK = "oktopk"


def oktopk_density(codec: str) -> float | None | bool:
    """oktopk_density tells whether codec is Compression.oktopk: False when it is not, else
    the density it names (None: the conf's push.density)."""
    if codec != OKTOPK and not codec.startswith(OKTOPK + ":"):
        return False
    if codec == OKTOPK:
        return None
    try:
        d = float(codec[len(OKTOPK) + 1:])
    except ValueError:
        d = -1.0
    if not 0 < d <= 1:
        raise ValueError(f"ordo.torch: compression={codec!r}: the density after 'oktopk:' is a "
                         "fraction of the model in (0, 1] (push.density)")
    return d


def codec_of(compression: Any) -> str:
    """codec_of returns the codec spec of a Compression member, a Compressor, a Horovod-style
    class with a codec attribute, or a spec string.

    Raises:
        ValueError: a compressor ordo does not know (a Horovod Compressor class of the
            script's own: ordo compresses on the wire, not in Python)
    """
    if compression is None:
        return "none"
    if isinstance(compression, str):
        return compression
    codec = getattr(compression, "codec", None)
    if isinstance(codec, str):
        return codec
    raise ValueError(f"ordo.torch: compression={compression!r} is not one of ordo's codecs; "
                     "ordo compresses on the wire: pass ordo.torch.Compression.none, .fp16, "
                     ".bf16, .onebit, .topk(k), .randomk(k) or .oktopk(density)")
