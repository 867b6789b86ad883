"""residuals: this worker's error-feedback residuals in DistributedOptimizer's state_dict.

A codec with error feedback (Compression.onebit, topk(k), randomk(k)) keeps, per pushed
message, what its encoding left out, and the next push adds it back: a worker's own state, like
Adam's moments. A run resumed from a checkpoint without them pushes other gradients than the
uninterrupted run would. DistributedOptimizer.state_dict() carries them under RESIDUALS: the
library's file (ORDOEF01, docs/formats.md) with the rank it belongs to, the codec and the
optimizer's parameters; load_state_dict() hands it back to the library before this worker's
first push (at the join, when that is still to come). A state of another rank is not loaded
(a warning says so): each rank saves and loads its own. docs/torch.md, "Checkpoints with
error feedback".
"""
from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ordo
from ordo.torch import runtime as rt

RESIDUALS = "ordo_residuals"  # the state_dict's key
# the file goes through memory where it can: the library writes it durably (fsync)
_TMP = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def error_feedback(codec: str) -> bool | None:
    """error_feedback tells whether a codec spec keeps residuals (a lossy codec unless
    ef=none; a cast only with ef=vanilla), None for auto (the plan chooses)."""
    name, _, rest = codec.partition(",")
    name = name.split(":")[0].strip()
    options = {o.strip() for o in rest.split(",")}
    if name == "auto":
        return None
    if "ef=none" in options or "ef=vanilla" in options:
        return "ef=vanilla" in options
    return name not in ("", "none", "fp16", "bf16")


def without(state: dict) -> dict:
    """without returns an optimizer state_dict without its residuals (a copy when it had
    them): what another rank may take."""
    if RESIDUALS not in state:
        return state
    return {k: v for k, v in state.items() if k != RESIDUALS}


class Residuals:
    """Residuals saves and loads one DistributedOptimizer's residuals: codec is its declared
    codec ("none": the conf's [push] compression), params its (name, numel) pairs, settle
    waits for its transfers in flight."""

    def __init__(self, runtime: rt.Runtime, codec: str, params: list[tuple[str, int]],
                 settle: Callable[[], None]):
        self._rt = runtime
        if codec == "none":
            codec = str(runtime.settings.get("push.compression") or
                        rt.launcher_value("push", "compression", runtime.conf) or "none")
        self._codec = codec
        self._keeps = error_feedback(codec)  # False: no residuals, nothing to wait for
        self._params = [[n, k] for n, k in params]
        self._settle = settle
        self._pending: dict | None = None  # loaded before the join, handed over at it
        self._armed = False

    def save(self) -> dict | None:
        """save returns this worker's residuals as of its last push (its transfers in flight
        waited for), or None when the run keeps none (or it was not joined, or has left)."""
        if self._pending is not None:
            return self._pending
        if not self._rt.joined or self._keeps is False:
            return None
        import ordo.torch as ot
        if ot._runtime is not self._rt:  # shut down: the residuals left with the library
            warnings.warn("ordo.torch: optimizer.state_dict() after shutdown() holds no "
                          "error-feedback residuals: take it before shutdown() for an exact "
                          "resume", stacklevel=3)
            return None
        self._settle()
        with tempfile.TemporaryDirectory(prefix="ordo-residuals-", dir=_TMP) as d:
            path = Path(d) / "residuals.bin"
            self._rt.client.save_state(str(path))
            if not path.exists():  # no codec of the run keeps residuals
                return None
            data = path.read_bytes()
        return {"rank": self._rt.rank(), "codec": self._codec, "params": self._params,
                "state": data}

    def load(self, blob: Any) -> None:
        """load takes save's dict back: this rank's is handed to the library now (joined) or
        at the join; another rank's is left out with a warning.

        Raises:
            ValueError: not save's dict, or of another codec or other parameters (named)
            OrdoError: the library refused the file (this worker pushed already, other
                tensors), naming what differs
        """
        self.check(blob)
        rank = self._rt.rank()
        if blob["rank"] != rank:
            warnings.warn(f"ordo.torch: load_state_dict: the state holds rank {blob['rank']}'s "
                          f"error-feedback residuals; rank {rank} keeps its own (zeros in a "
                          "fresh run): for an exact resume each rank saves and loads its own "
                          "optimizer.state_dict()", stacklevel=3)
            return
        self._pending = blob
        if self._rt.joined:
            self._apply()
        elif not self._armed:
            self._armed = True
            self._rt.on_join.append(self._apply)

    def check(self, blob: Any) -> None:
        """check raises ValueError unless blob is save's dict of this codec and parameters."""
        keys = {"rank", "codec", "params", "state"}
        if not isinstance(blob, dict) or set(blob) != keys:
            raise ValueError(f"ordo.torch: load_state_dict: state[{RESIDUALS!r}] is not the "
                             f"residuals DistributedOptimizer.state_dict() saves (a dict of "
                             f"{sorted(keys)})")
        if blob["codec"] != self._codec:
            raise ValueError(f"ordo.torch: load_state_dict: the residuals are of compression "
                             f"{blob['codec']!r}, this run's is {self._codec!r} (drop "
                             f"state[{RESIDUALS!r}] to start from zero residuals)")
        saved = [list(p) for p in blob["params"]]
        for i, (got, mine) in enumerate(zip(saved, self._params, strict=False)):
            if got != mine:
                raise ValueError(f"ordo.torch: load_state_dict: the residuals' parameter {i} is "
                                 f"{got[0]!r} of {got[1]} values, this optimizer's is "
                                 f"{mine[0]!r} of {mine[1]}")
        if len(saved) != len(self._params):
            raise ValueError(f"ordo.torch: load_state_dict: the residuals are of {len(saved)} "
                             f"parameters, this optimizer has {len(self._params)}")

    def _apply(self) -> None:
        self._armed = False
        blob, self._pending = self._pending, None
        if blob is None:
            return
        with tempfile.TemporaryDirectory(prefix="ordo-residuals-", dir=_TMP) as d:
            path = Path(d) / "residuals.bin"
            path.write_bytes(blob["state"])
            try:
                self._rt.client.load_state(str(path))
            except ordo.OrdoError as e:  # named as the user knows it, not by the temporary file
                text = str(e).rsplit(" [", 1)[0].replace(str(path), f"state[{RESIDUALS!r}]")
                raise ordo.OrdoError(e.code, f"ordo.torch: load_state_dict: {text}") from None
